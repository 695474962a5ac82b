package interop

// The kernel backend of rdsoverdat (Config{Kernel: true}) needs AF_RDS,
// which the host may lack; the lab VM's kernel has rds and rds_tcp loaded.
// This test builds rdsoverdat's test binary and runs its backend tests
// (the same code over rdsoverdat and over the kernel) inside rdsVM.

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
	out, err := rdsVM.exec(ctx, t, bin, "-test.run", "^TestBackend", "-test.v", "-test.count=1").CombinedOutput()
	t.Logf("in the VM:\n%s", out)
	if err != nil {
		t.Fatalf("rdsoverdat.test in the VM: %v", err)
	}
	pass := regexp.MustCompile(`--- PASS: (TestBackend\w+)/kernel`).FindAllStringSubmatch(string(out), -1)
	if len(pass) < 5 || strings.Contains(string(out), "--- SKIP") {
		t.Errorf("%d kernel subtests passed (want every TestBackend*, none skipped)", len(pass))
	}
}
