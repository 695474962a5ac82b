package rdsoverdat

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// RDS reaches RDMA through the DAT API only (DATConfig names a registry
// and an IA): no file of the package imports a verbs package.
func TestNoVerbsImport(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if imp == "github.com/godapl/godapl/verbs" || strings.HasPrefix(imp, "github.com/godapl/godapl/verbs/") {
			t.Errorf("rdsoverdat imports %s", imp)
		}
	}
}

// A transport reaches the core through package xport only. The
// transports live in packages of their own (internal/<name>), where they
// cannot name the core's unexported identifiers, and import the core
// they cannot either (it imports them); what is left to check is that
// they import nothing else of the module but xport, the wire codecs and
// the DAT API (the dat transport reaches nothing below DAT), besides the
// standard library, golang.org/x/sys/unix for the tcp transport's system
// calls, the module's generic ring buffer and its unmap notices.
func TestTransportsUseXportOnly(t *testing.T) {
	allowed := func(imp string) bool {
		switch {
		case imp == "github.com/godapl/godapl/rdsoverdat/internal/xport",
			imp == "github.com/godapl/godapl/rdsoverdat/wire",
			imp == "github.com/godapl/godapl/dat",
			strings.HasPrefix(imp, "github.com/godapl/godapl/dat/"),
			imp == "golang.org/x/sys/unix",
			imp == "github.com/godapl/godapl/internal/ring",
			imp == "github.com/godapl/godapl/internal/memhook":
			return true
		}
		// A standard library path has no dot in its first element.
		return !strings.Contains(strings.Split(imp, "/")[0], ".")
	}
	for _, dir := range []string{"internal/tcp", "internal/dat"} {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.GoFiles) == 0 {
			t.Fatalf("%s: no Go files", dir)
		}
		for _, imp := range p.Imports {
			if !allowed(imp) {
				t.Errorf("%s imports %s", dir, imp)
			}
		}
	}
	// No transport file is left in the core's package.
	for _, prefix := range []string{"tcp", "dat"} {
		names, err := filepath.Glob(prefix + "*.go")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !strings.HasSuffix(name, "_test.go") {
				t.Errorf("%s: a transport file in the core's package", name)
			}
		}
	}
}
