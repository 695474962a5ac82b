package interop

// godapl's rping (cmd/rping over verbs/siw) against the kernel's rping over
// siw, both ways: kernel server in the VM with our client in netns ratlab,
// and our server in ratlab with the kernel client in the VM. Each exchange
// is captured on br77; a failing test prints the capture as hex.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rping ports of these tests, one per exchange (see siw_test.go for the
// ones taken before).
const (
	portKernelServer64   = 7180
	portKernelServer4000 = 7181
	portGoServer64       = 7182
	portGoServer4000     = 7183
	portGoServerP        = 7184
)

// rpingCount is the -C of every exchange.
const rpingCount = 10

// exchangeTimeout bounds one client run: under TCG a kernel rping of ten
// 4000-byte pings takes a second or two.
const exchangeTimeout = 90 * time.Second

var rpingSizes = []struct {
	size, kernelServerPort, goServerPort int
}{
	{64, portKernelServer64, portGoServer64},
	{4000, portKernelServer4000, portGoServer4000},
}

// TestRpingGoServerKernelClient: our rping -s in netns ratlab, `rping -c
// -V` in the VM.
func TestRpingGoServerKernelClient(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t, "./cmd/rping")
	for _, c := range rpingSizes {
		t.Run(fmt.Sprint("S", c.size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			port := strconv.Itoa(c.goServerPort)
			size := strconv.Itoa(c.size)
			captureBr77(ctx, t, c.goServerPort)
			server := startJob(t, nsExec(ctx, t, bin, "-s", "-a", hostIP, "-p", port, "-S", size, "-v"))
			waitNSListen(ctx, t, net.JoinHostPort(hostIP, port), server)

			cctx, ccancel := context.WithTimeout(ctx, exchangeTimeout)
			defer ccancel()
			t0 := time.Now()
			client, clientOut := kernelRping(cctx, t, "-c", "-a", hostIP, "-p", port, "-C", strconv.Itoa(rpingCount), "-S", size, "-V", "-v")
			out, err := client.CombinedOutput()
			t.Logf("kernel client: exit %d after %.2fs", exitCode(err), time.Since(t0).Seconds())
			serr := waitJob(ctx, t, server)

			checkRpingRun(t, "kernel client (-c -V)", exitCode(err), string(out)+clientOut(), "ping data: ", c.size)
			checkRpingRun(t, "our server (-s)", exitCode(serr), server.out.String(), "server ping data: ", c.size)
		})
	}
}

// TestRpingGoPersistentServer: our rping -s -P serves two kernel clients
// one after the other, then stops on SIGTERM with exit 0.
func TestRpingGoPersistentServer(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t, "./cmd/rping")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	port := strconv.Itoa(portGoServerP)
	captureBr77(ctx, t, portGoServerP)
	server := startJob(t, nsExec(ctx, t, bin, "-s", "-P", "-a", hostIP, "-p", port, "-v"))
	waitNSListen(ctx, t, net.JoinHostPort(hostIP, port), server)
	for i := range 2 {
		cctx, ccancel := context.WithTimeout(ctx, exchangeTimeout)
		client, clientOut := kernelRping(cctx, t, "-c", "-a", hostIP, "-p", port, "-C", "3", "-V", "-v")
		vmOut, err := client.CombinedOutput()
		ccancel()
		out := string(vmOut) + clientOut()
		if exitCode(err) != 0 || strings.Count(out, "ping data: rdma-ping-") != 3 {
			t.Fatalf("kernel client %d: exit %d\n%s\nour server so far:\n%s", i, exitCode(err), out, server.out.String())
		}
	}
	// Both connections are over on our side too before the server stops.
	waitOutput(ctx, t, server, "server DISCONNECT EVENT...", 2)
	if err := server.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	serr := waitJob(ctx, t, server)
	if exitCode(serr) != 0 || strings.Count(server.out.String(), "server ping data: rdma-ping-") != 6 {
		t.Fatalf("our persistent server: exit %d, want 0 and 6 pings:\n%s", exitCode(serr), server.out.String())
	}
}

// TestRpingKernelServerGoClient: `rping -s` in the VM, our rping -c in
// netns ratlab with -V. It runs last of the rping tests: a stall here
// (the kernel siw accept race, docs/INTEROP-FINDINGS.md §1) once ended in
// a kernel BUG in iw_cm, after which the VM's rdma_cm is unusable.
func TestRpingKernelServerGoClient(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t, "./cmd/rping")
	for _, c := range rpingSizes {
		t.Run(fmt.Sprint("S", c.size), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			port := strconv.Itoa(c.kernelServerPort)
			size := strconv.Itoa(c.size)
			captureBr77(ctx, t, c.kernelServerPort)
			serverCmd, serverOut := kernelRping(ctx, t, "-s", "-a", vmIP, "-p", port, "-C", strconv.Itoa(rpingCount), "-S", size, "-v")
			server := startJob(t, serverCmd)
			waitVMListen(ctx, t, net.JoinHostPort(vmIP, port), server)

			cctx, ccancel := context.WithTimeout(ctx, exchangeTimeout)
			defer ccancel()
			t0 := time.Now()
			out, err := nsExec(cctx, t, bin, "-c", "-a", vmIP, "-p", port, "-C", strconv.Itoa(rpingCount), "-S", size, "-V", "-v").CombinedOutput()
			t.Logf("our client: exit %d after %.2fs", exitCode(err), time.Since(t0).Seconds())
			serr := waitJob(ctx, t, server)

			checkRpingRun(t, "our client (-c -V)", exitCode(err), string(out), "ping data: ", c.size)
			checkRpingRun(t, "kernel server (-s)", exitCode(serr), server.out.String()+serverOut(), "server ping data: ", c.size)
		})
	}
}

// kernelRping returns a command running the kernel's rping with args in
// the VM, and a function that returns what rping printed once it ended.
//
// The output goes to a file in a directory the VM shares with the host
// (<repo>/bin), not through vm.sh exec, so that the test reads exactly what
// rping wrote once it ended, however vm.sh streams a job's output while it
// grows (docs/INTEROP-FINDINGS.md §3). stdbuf makes rping's stdout
// line-buffered: fully buffered, it is flushed in 4 KiB blocks while stderr
// is not, and a "DISCONNECT EVENT" line would land in the middle of a ping.
func kernelRping(ctx context.Context, t *testing.T, args ...string) (*exec.Cmd, func() string) {
	t.Helper()
	dir := filepath.Join(lab.repo, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "interop-rping-*.out")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	script := `out=$1; shift; exec stdbuf -oL rping "$@" >"$out" 2>&1`
	cmd := vmExec(ctx, t, append([]string{"sh", "-c", script, "sh", f.Name()}, args...)...)
	return cmd, func() string {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			return fmt.Sprintf("(reading rping's output: %v)", err)
		}
		return string(b)
	}
}

// checkRpingRun checks one side's exit status and its -v lines: exactly
// rpingCount lines prefix+ping i, each the C string rping's client writes
// for ping i at that size.
func checkRpingRun(t *testing.T, who string, code int, out, prefix string, size int) {
	t.Helper()
	var got []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			got = append(got, strings.TrimRight(line, "\r\n"))
		}
	}
	ok := code == 0 && len(got) == rpingCount
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == prefix+pingText(i, size)
	}
	if !ok {
		t.Errorf("%s: exit %d with %d %q lines, want exit 0 and %d exact lines; output:\n%s",
			who, code, len(got), prefix, rpingCount, clipText(out))
	}
}

// pingText is what rping's client puts in its buffer for ping n, up to
// the terminating zero in the last byte: "rdma-ping-n: " and bytes from
// 'A'+n counting up, both wrapping from 'z' to 'A'. Written here from the
// protocol description (iwarp-wire.md §8.2), independently of cmd/rping.
func pingText(n, size int) string {
	b := []byte(fmt.Sprintf("rdma-ping-%d: ", n))
	c := 'A' + n%('z'-'A'+1)
	for len(b) < size-1 {
		b = append(b, byte(c))
		if c++; c > 'z' {
			c = 'A'
		}
	}
	return string(b[:size-1])
}

// waitJob waits for a job that should end by itself; a job still running
// at the deadline fails the test.
func waitJob(ctx context.Context, t *testing.T, j *job) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	defer cancel()
	err := j.wait(ctx)
	if ctx.Err() != nil {
		t.Fatalf("%s did not end: %v; output:\n%s", strings.Join(j.cmd.Args, " "), err, clipText(j.out.String()))
	}
	return err
}

// waitOutput waits until the job has printed want n times.
func waitOutput(ctx context.Context, t *testing.T, j *job, want string, n int) {
	t.Helper()
	for strings.Count(j.out.String(), want) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%q not printed %d times: %v; output:\n%s", want, n, ctx.Err(), clipText(j.out.String()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNSListen waits until a TCP socket in netns ratlab listens on addr:
// our rping server, started with nsExec, is ready for the kernel client.
func waitNSListen(ctx context.Context, t *testing.T, addr string, server *job) {
	t.Helper()
	var last string
	for {
		out, err := nsExec(ctx, t, "ss", "-ltnH").CombinedOutput()
		last = string(out)
		if err == nil && listensOn(last, addr) {
			return
		}
		select {
		case <-server.done:
			t.Fatalf("server ended (exit %d) before listening on %s:\n%s", exitCode(server.err), addr, server.out.String())
		case <-ctx.Done():
			t.Fatalf("nothing listens on %s in netns ratlab: %v; last ss -ltn:\n%s", addr, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// captureBr77 captures the test's TCP port on br77 from the start of the
// test. When the test fails, the capture is printed as hex (tcpdump -X)
// and kept in the system temp directory for a closer look.
func captureBr77(ctx context.Context, t *testing.T, port int) {
	t.Helper()
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	pcap := filepath.Join(os.TempDir(), fmt.Sprintf("godapl-%s-%d.pcap", name, port))
	dump := startJob(t, nsExec(ctx, t, "tcpdump", "-i", "br77", "-U", "-s", "0", "-w", pcap, "tcp port "+strconv.Itoa(port)))
	waitOutput(ctx, t, dump, "listening on", 1)
	t.Cleanup(func() {
		if t.Failed() {
			logKernelTrouble(t)
		}
		// tcpdump writes each packet as it comes (-U); stop it and read back.
		_ = dump.cmd.Process.Signal(os.Interrupt)
		<-dump.done
		if !t.Failed() {
			os.Remove(pcap)
			return
		}
		out, err := exec.Command("tcpdump", "-r", pcap, "-nn", "-tt", "-X").CombinedOutput()
		t.Logf("capture of port %d on br77 (%s), tcpdump -X (%v):\n%s", port, pcap, err, clipLines(string(out), 400))
	})
}

// logKernelTrouble logs what the VM kernel said about siw and iw_cm
// trouble (a BUG, a warning, a stuck task): after a kernel BUG in iw_cm
// every later rdma_cm test in this VM fails too.
func logKernelTrouble(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := labCmd(ctx, "exec", "--", "sh", "-c",
		"dmesg | grep -E -A12 'kernel BUG|WARNING:|blocked for more than|Call Trace' | tail -60").CombinedOutput()
	if len(strings.TrimSpace(string(out))) > 0 || err != nil {
		t.Logf("VM kernel log (%v):\n%s", err, out)
	}
}

// clipText keeps long outputs (64 KiB pings) readable in failures.
func clipText(s string) string {
	const max = 4000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + "\n[...]\n" + s[len(s)-max/2:]
}

// clipLines keeps the first n lines of s.
func clipLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("[... %d more lines]\n", len(lines)-n)
}
