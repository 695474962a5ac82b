package shmring

import (
	"go/build"
	"testing"
)

// The package sits below the daemon and its client backend and knows
// nothing of RDS: it imports the standard library, x/sys/unix and the
// module's unmap notice (memhook, itself on the standard library only),
// so that either side can use it without pulling the other in.
func TestImportsNothingOfTheModule(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == "golang.org/x/sys/unix" || imp == "github.com/godapl/godapl/internal/memhook" {
			continue
		}
		if p, err := build.Import(imp, "", build.FindOnly); err != nil || !p.Goroot {
			t.Errorf("imports %s", imp)
		}
	}
}
