package tools

import (
	"os"
	"strings"
	"testing"
)

// Every tool of cmd/ answers --version with one line naming itself and
// the module, and exits 0, whatever else is on its command line.
func TestVersion(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir("../../cmd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		n++
		tool := e.Name()
		for _, args := range [][]string{{"--version"}, {"-version"}, {"-s", "--version"}} {
			r := run(t, "", nil, tool, args...)
			r.want(t, 0, tool+" github.com/godapl/godapl ")
			if strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
				t.Errorf("%s %v: stdout %q stderr %q, want one line on stdout", tool, args, r.stdout, r.stderr)
			}
		}
	}
	if n < 8 {
		t.Fatalf("found %d tools in cmd/, want at least 8", n)
	}
}
