//go:build udapl

package udapltest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBadInput builds testdata/badinput.c and runs it on the library:
// NULL, foreign, wrongly typed and freed handles, handles of a closed IA,
// calls in the wrong EP state, triplets outside their LMR or PZ, bad
// arguments, each with the DAT return code it must get; and a thread
// blocked in dat_evd_wait that must block no other thread.
func TestBadInput(t *testing.T) {
	need(t, "cc")
	i := newIA(t)
	bin := filepath.Join(t.TempDir(), "badinput")
	if out, err := exec.Command("cc", "-Wall", "-Werror", "-o", bin, "testdata/badinput.c", "-ldat2", "-lpthread").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	out, err := i.run(t, time.Minute, bin, iaName)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "PASSED") {
		t.Fatalf("badinput: %v\n%s", err, out)
	}
	t.Logf("%d cases", len(lines(out, "ok  ")))
}
