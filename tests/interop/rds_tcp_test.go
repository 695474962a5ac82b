package interop

// RDS/TCP interoperability (issue 8): rdsoverdat's tcp transport in
// cmd/rds-cat at 192.168.77.1 (netns ratlab) against the VM kernel's
// rds_tcp at 192.168.77.2, in both directions. The Go side has the
// smaller address, so it is the connecting side of every path; when the
// kernel sends first, its trigger connection is reset and Go connects
// back (rds-wire.md §2.2). RDS ports used here: 4010-4017, 18005 (the
// lab's rds_smoke.py).

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRDSTCPKernelSendsToGo: the kernel sends first (rds_smoke.py --peer);
// the Go node echoes; the kernel socket receives the echo.
func TestRDSTCPKernelSendsToGo(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t, "./cmd/rds-cat")
	goSide := startJob(t, nsExec(ctx, t, bin, "-bind", hostIP+":4010", "-echo", "-timeout", "20s"))
	time.Sleep(time.Second) // the Go node listens on 16385 once bound
	out, err := vmExec(ctx, t, "python3", filepath.Join(lab.dir, "rds_smoke.py"), "--no-local",
		"--peer", hostIP+":4010").CombinedOutput()
	if err != nil {
		t.Fatalf("rds_smoke.py: %v\n%s\nGo side:\n%s", err, out, goSide.out.String())
	}
	want := "reply from " + hostIP + ":4010: b'echo: hello from the VM kernel RDS/TCP'"
	if !strings.Contains(string(out), want) {
		t.Fatalf("kernel output lacks %q:\n%s\nGo side:\n%s", want, out, goSide.out.String())
	}
	if err := goSide.wait(ctx); err != nil {
		t.Fatalf("rds-cat: %v\n%s", err, goSide.out.String())
	}
	if !strings.Contains(goSide.out.String(), "recv from "+vmIP+":18005 len 32") {
		t.Errorf("Go side output:\n%s", goSide.out.String())
	}
	t.Logf("Go side:\n%s", goSide.out.String())
}

// TestRDSTCPGoSendsToKernel: Go sends 0 B, 100 B, 4 KiB and 64 KiB
// messages to a kernel AF_RDS socket, which answers each.
func TestRDSTCPGoSendsToKernel(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t, "./cmd/rds-cat")
	script := filepath.Join(lab.repo, "tests", "interop", "testdata", "rds_kernel_echo.py")
	kernel := startJob(t, vmExec(ctx, t, "python3", script, vmIP, "4012", "4", "30"))
	waitJobOutput(ctx, t, kernel, "kernel listening")
	out, err := nsExec(ctx, t, bin, "-bind", hostIP+":4011", "-send", vmIP+":4012", "-count", "4",
		"-sizes", "0,100,4096,65536", "-timeout", "30s").CombinedOutput()
	if err != nil {
		t.Fatalf("rds-cat: %v\n%s\nkernel:\n%s", err, out, kernel.out.String())
	}
	if err := kernel.wait(ctx); err != nil {
		t.Fatalf("kernel echo: %v\n%s", err, kernel.out.String())
	}
	for _, n := range []string{"0", "100", "4096", "65536"} {
		if !strings.Contains(kernel.out.String(), "kernel recv "+n+" from "+hostIP+":4011") {
			t.Errorf("kernel did not receive %s bytes:\n%s", n, kernel.out.String())
		}
	}
	if c := strings.Count(string(out), "reply from "+vmIP+":4012"); c != 4 {
		t.Errorf("%d replies:\n%s", c, out)
	}
	t.Logf("Go side:\n%s", out)
}

// TestRDSTCPPing: rds-ping's protocol both ways (messages to port 0 are
// answered with 0-byte pongs from port 0).
func TestRDSTCPPing(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBinary(t, "./cmd/rds-cat")
	out, err := nsExec(ctx, t, bin, "-bind", hostIP+":4013", "-ping", vmIP, "-count", "3", "-timeout", "20s").CombinedOutput()
	if err != nil || strings.Count(string(out), "from "+vmIP+":0 len 0") != 3 {
		t.Fatalf("Go pinging the kernel: %v\n%s", err, out)
	}
	goSide := startJob(t, nsExec(ctx, t, bin, "-bind", hostIP+":4014", "-echo", "-timeout", "15s"))
	time.Sleep(time.Second)
	script := filepath.Join(lab.repo, "tests", "interop", "testdata", "rds_kernel_echo.py")
	kout, err := vmExec(ctx, t, "python3", script, "ping", vmIP, hostIP, "3", "10").CombinedOutput()
	if err != nil || strings.Count(string(kout), "kernel pong 0 from "+hostIP+":0") != 3 {
		t.Fatalf("kernel pinging Go: %v\n%s\nGo side:\n%s", err, kout, goSide.out.String())
	}
	goSide.wait(ctx)
}

// waitJobOutput waits until a job has printed s.
func waitJobOutput(ctx context.Context, t *testing.T, j *job, s string) {
	t.Helper()
	for !strings.Contains(j.out.String(), s) {
		select {
		case <-j.done:
			t.Fatalf("job ended (%v) before printing %q:\n%s", j.err, s, j.out.String())
		case <-ctx.Done():
			t.Fatalf("no %q: %v\n%s", s, ctx.Err(), j.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
