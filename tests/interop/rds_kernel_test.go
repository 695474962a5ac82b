package interop

// The kernel backend of rdsoverdat (Config{Kernel: true}) needs AF_RDS,
// which the host may lack; the lab VM's kernel has rds and rds_tcp loaded.
// This test builds rdsoverdat's test binary and runs its backend tests
// (the same code over rdsoverdat and over the kernel) inside rdsVM. Only
// their rdsoverdat and kernel halves run there: the VM has rds_tcp loaded,
// whose listener on *:16385 keeps rdsoverdat's tcp transport from
// listening (TestBackendPortSpace/tcp runs on the host, in make test).

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRDSKernelBackendInVM(t *testing.T) {
	ctx, _, _ := rdsTest(t, 3*time.Minute)
	bin := filepath.Join(lab.repo, "bin", "rdsoverdat.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./rdsoverdat")
	build.Dir = lab.repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	out, err := rdsVM.exec(ctx, t, bin, "-test.run", "^TestBackend/^(rdsoverdat|kernel)$", "-test.v", "-test.count=1").CombinedOutput()
	t.Logf("in the VM:\n%s", out)
	if err != nil {
		t.Fatalf("rdsoverdat.test in the VM: %v", err)
	}
	ran := regexp.MustCompile(`=== RUN +TestBackend\w+/kernel\r?\n`).FindAllString(string(out), -1)
	pass := regexp.MustCompile(`--- PASS: TestBackend\w+/kernel `).FindAllString(string(out), -1)
	if len(ran) < 5 || len(pass) != len(ran) || strings.Contains(string(out), "--- SKIP") {
		t.Errorf("%d of %d kernel subtests passed (want all of every TestBackend*, none skipped)", len(pass), len(ran))
	}
}
