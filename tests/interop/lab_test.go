package interop

// The harness around the QEMU lab (tests/lab, README.md there): it finds
// the lab and its cache, boots each VM the tests ask for once (mainVM for
// siw and rping, rdsVM for RDS), and wraps vm.sh so that every test runs
// kernel peers in a VM (vmExec, rdsVM.exec) and Go peers on the host inside
// netns ratlab (nsExec). Interop tests must not call t.Parallel: `vm.sh
// killjobs`, run after each test, stops every job in that VM, including
// another test's.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
)

// Environment knobs.
const (
	envEnable       = "GODAPL_INTEROP"  // "1" enables the tests (and the VM boot)
	envLab          = "GODAPL_LAB"      // lab directory; default tests/lab of this repository
	envKeep         = "GODAPL_LAB_KEEP" // "1" leaves a VM this run booted running, for quick reruns
	envLabCache     = "LAB_CACHE"       // the lab's own variable; must match the one setup.sh used
	defaultLabCache = "/var/cache/ratlab"
)

// The lab's network: vm.sh's default VM name and addresses (tests/lab/README.md).
const (
	vmName = "vm"
	vmIP   = "192.168.77.2" // the VM, siw0 on its eth0
	hostIP = "192.168.77.1" // br77 in netns ratlab, where nsExec runs
)

const (
	// cmdWaitDelay bounds how long Wait waits after Cancel: vm.sh exec needs
	// up to about 5 s to have the job in the VM stopped (TERM, then KILL after 2 s).
	cmdWaitDelay = 10 * time.Second
	// bootTimeout: the boot takes 10-16 s under TCG on an idle host; at
	// load 19 with two other VMs running one took more than 3 minutes.
	bootTimeout = 6 * time.Minute
)

// lab is what TestMain found; read-only once the tests run.
var lab struct {
	dir   string // the lab directory holding vm.sh
	cache string // LAB_CACHE
	repo  string // repository root, shared read-write with the VM
	skip  string // non-empty: why every interop test skips
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	lab.skip = discoverLab()
	code := m.Run()
	if lab.skip == "" {
		for _, v := range []*labVM{mainVM, rdsVM} {
			if err := v.finish(); err != nil {
				fmt.Fprintln(os.Stderr, "interop:", err)
				code = 1
			}
		}
	}
	return code
}

// discoverLab fills lab and returns why the tests must skip, or "".
func discoverLab() string {
	if os.Getenv(envEnable) != "1" {
		return fmt.Sprintf("interop tests boot a QEMU VM; set %s=1 to run them (as root, after scripts/lab-setup.sh)", envEnable)
	}
	if os.Geteuid() != 0 {
		return "interop tests need root (netns, tap devices, QEMU)"
	}
	wd, err := os.Getwd()
	if err != nil {
		return "cannot find the package directory: " + err.Error()
	}
	lab.repo, err = findRepoRoot(wd)
	if err != nil {
		return err.Error()
	}
	lab.dir = os.Getenv(envLab)
	if lab.dir == "" {
		lab.dir = filepath.Join(lab.repo, "tests", "lab")
	}
	// vm.sh resolves its own directory with pwd -P; use the same spelling
	// so that paths compared with the VM's command line match.
	if lab.dir, err = filepath.EvalSymlinks(lab.dir); err != nil {
		return fmt.Sprintf("no lab directory (set %s): %v", envLab, err)
	}
	if _, err := os.Stat(filepath.Join(lab.dir, "vm.sh")); err != nil {
		return fmt.Sprintf("no vm.sh in the lab directory %s (set %s)", lab.dir, envLab)
	}
	lab.cache = os.Getenv(envLabCache)
	if lab.cache == "" {
		lab.cache = defaultLabCache
	}
	if _, err := os.Stat(filepath.Join(lab.cache, "KVER")); err != nil {
		return fmt.Sprintf("no lab kernel in %s (%v): run scripts/lab-setup.sh with the same LAB_CACHE", lab.cache, err)
	}
	if lab.cache, err = filepath.EvalSymlinks(lab.cache); err != nil {
		return err.Error()
	}
	return ""
}

// findRepoRoot walks up from dir to the directory holding go.mod.
func findRepoRoot(dir string) (string, error) {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// labVM is one lab VM (vm.sh --name/--ip). Each is booted by the first
// test that needs it and stopped at the end of the run if this process
// booted it, so that a run that only needs one VM never touches another
// (another checkout's tests may be using it). mainVM carries the siw and
// rping tests; rdsVM the RDS ones, so that the two groups can run at the
// same time from two `go test` processes without `vm.sh killjobs` of one
// stopping the other's kernel peers.
type labVM struct {
	name, ip string
	opts     []string // extra vm.sh start options

	once    sync.Once
	tried   bool // once ran: some test asked for this VM
	err     error
	started bool
}

var (
	mainVM = &labVM{name: vmName, ip: vmIP}
	rdsVM  = &labVM{name: "rds", ip: "192.168.77.3", opts: []string{"--rdma", "", "--mem", "2048"}}
)

// requireLab skips the test unless the lab is enabled and found, and
// boots (or finds) the main VM.
func requireLab(t *testing.T) {
	t.Helper()
	requireVM(t, mainVM)
}

// requireVM skips the test unless the lab is enabled and found, and boots
// (or finds) VM v; a failed boot fails the test.
func requireVM(t *testing.T, v *labVM) {
	t.Helper()
	if lab.skip != "" {
		t.Skip(lab.skip)
	}
	v.once.Do(func() { v.tried = true; v.started, v.err = v.boot() })
	if v.err != nil {
		t.Fatal(v.err)
	}
}

// boot starts the VM with the repository shared, unless it already runs.
// A running VM is reused only when it shares the repository: otherwise
// binaries in <repo>/bin could look stale inside it (the host root is
// mounted cached in the VM; tests/lab/README.md).
// started reports whether this process ran `vm.sh start`, even if that
// failed: a boot that outlived bootTimeout can leave QEMU running, and
// finish must stop it.
func (v *labVM) boot() (started bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	if labCmd(ctx, "status", "--name", v.name).Run() == nil {
		if err := v.checkShared(); err != nil {
			return false, err
		}
		return false, nil
	}
	t0 := time.Now()
	args := append([]string{"start", "--name", v.name, "--ip", v.ip, "--share", lab.repo}, v.opts...)
	out, err := labCmd(ctx, args...).CombinedOutput()
	if err != nil {
		return true, fmt.Errorf("vm.sh %s: %v\n%s(console: %s)", strings.Join(args, " "), err, out,
			filepath.Join(lab.cache, "vms", v.name, "console.log"))
	}
	fmt.Fprintf(os.Stderr, "interop: %s (vm.sh start took %.1fs)\n",
		strings.TrimSpace(string(out)), time.Since(t0).Seconds())
	return true, nil
}

// checkShared verifies from QEMU's command line that the running VM was
// started with --share <repo>.
func (v *labVM) checkShared() error {
	pidFile := filepath.Join(lab.cache, "vms", v.name, "qemu.pid")
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "cmdline"))
	if err != nil {
		return err
	}
	if !bytes.Contains(cmdline, []byte(" lab.share="+lab.repo+" ")) &&
		!bytes.Contains(cmdline, []byte(" lab.share="+lab.repo+"\x00")) {
		return fmt.Errorf("VM %q already runs without --share %s; stop it (LAB_CACHE=%s %s/vm.sh stop --name %s) and rerun",
			v.name, lab.repo, lab.cache, lab.dir, v.name)
	}
	return nil
}

// finish stops the VM at the end of the run if this process booted it, or
// tried to (and GODAPL_LAB_KEEP is not set for a VM that came up).
func (v *labVM) finish() error {
	switch {
	case !v.tried:
		return nil
	case !v.started:
		if v.err == nil {
			fmt.Fprintf(os.Stderr, "interop: VM %q was already running before the tests; left running\n", v.name)
		}
		return nil
	case v.err == nil && os.Getenv(envKeep) == "1":
		fmt.Fprintf(os.Stderr, "interop: %s=1: VM %q left running (stop: LAB_CACHE=%s %s/vm.sh stop --name %s)\n",
			envKeep, v.name, lab.cache, lab.dir, v.name)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := labCmd(ctx, "stop", "--name", v.name).CombinedOutput(); err != nil && v.err == nil {
		return fmt.Errorf("vm.sh stop --name %s: %v\n%s", v.name, err, out)
	}
	return nil
}

// labCmd returns `vm.sh args...` bound to ctx. Cancelling ctx sends SIGTERM,
// which vm.sh forwards to the job in the VM; the default SIGKILL would leave
// that job running (tests/lab/README.md).
func labCmd(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(lab.dir, "vm.sh"), args...)
	cmd.Env = append(os.Environ(), envLabCache+"="+lab.cache)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = cmdWaitDelay
	return cmd
}

// vmExec returns a command running args as root inside the main VM, in
// the caller's working directory. The kernel utilities (rping, ib_*, ss)
// run there. It arranges `vm.sh killjobs` at the end of the test, so that
// no server outlives it.
func vmExec(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return mainVM.exec(ctx, t, args...)
}

// exec is vmExec for VM v.
func (v *labVM) exec(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	v.registerKilljobs(t)
	return labCmd(ctx, append([]string{"exec", "--name", v.name, "--"}, args...)...)
}

// nsExec returns a command running args natively on the host inside netns
// ratlab, at 192.168.77.1: the side for Go peers. The test process itself
// stays outside the namespace, where 192.168.77.2 is not reachable.
func nsExec(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return labCmd(ctx, append([]string{"nsexec", "--"}, args...)...)
}

// killjobsFor holds the (test, VM) pairs that have a killjobs cleanup
// registered.
var killjobsFor sync.Map // killjobsKey -> struct{}

type killjobsKey struct {
	t *testing.T
	v *labVM
}

func (v *labVM) registerKilljobs(t *testing.T) {
	k := killjobsKey{t, v}
	if _, loaded := killjobsFor.LoadOrStore(k, struct{}{}); loaded {
		return
	}
	t.Cleanup(func() {
		killjobsFor.Delete(k)
		v.killjobs(t)
	})
}

// killjobs stops every job still running in the VM.
func (v *labVM) killjobs(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := labCmd(ctx, "killjobs", "--name", v.name).CombinedOutput(); err != nil {
		t.Errorf("vm.sh killjobs --name %s: %v\n%s", v.name, err, out)
	}
}

// job is a command running in the background, typically a kernel server.
// Its goroutine ends when the command does; the test's cleanup makes sure
// of that.
type job struct {
	cmd  *exec.Cmd
	out  testutil.LockedBuffer
	done chan struct{}
	err  error // the command's exit; valid once done is closed
}

// startJob starts cmd and collects its combined output. At cleanup a job
// still running gets SIGTERM (SIGKILL after cmdWaitDelay) and is waited for.
func startJob(t *testing.T, cmd *exec.Cmd) *job {
	t.Helper()
	j := &job{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &j.out, &j.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", strings.Join(cmd.Args, " "), err)
	}
	go func() {
		j.err = cmd.Wait()
		close(j.done)
	}()
	t.Cleanup(func() {
		select {
		case <-j.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-j.done:
		case <-time.After(cmdWaitDelay):
			_ = cmd.Process.Kill()
			<-j.done
		}
	})
	return j
}

// wait waits for the job to end, or for ctx.
func (j *job) wait(ctx context.Context) error {
	select {
	case <-j.done:
		return j.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitVMListen waits until a TCP socket in the VM listens on addr
// ("192.168.77.2:7174"), as `ss -ltn` shows it. rdma_cm servers (rping -s)
// need a while under TCG before their siw listener exists; a client started
// earlier fails. It gives up when server ends first or ctx expires.
func waitVMListen(ctx context.Context, t *testing.T, addr string, server *job) {
	t.Helper()
	var last string
	for {
		out, err := vmExec(ctx, t, "ss", "-ltnH").CombinedOutput()
		last = string(out)
		if err == nil && listensOn(last, addr) {
			return
		}
		select {
		case <-server.done:
			t.Fatalf("server ended (%v) before listening on %s:\n%s", server.err, addr, server.out.String())
		case <-ctx.Done():
			t.Fatalf("nothing listens on %s in the VM: %v; last ss -ltn:\n%s", addr, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listensOn reports whether `ss -ltnH` output has a socket on local addr.
func listensOn(ss, addr string) bool {
	for line := range strings.Lines(ss) {
		// State Recv-Q Send-Q Local-Address:Port Peer-Address:Port
		if f := strings.Fields(line); len(f) >= 4 && f[3] == addr {
			return true
		}
	}
	return false
}

// builds memoizes buildBinary per package for the whole test binary.
var builds sync.Map // package path -> func() (string, error)

// buildBinary builds the main package pkg (relative to the repository
// root, "./cmd/rping") into <repo>/bin/<name> and returns the binary's
// absolute path. The VM sees it current at the same path because the
// repository is shared with --share; anywhere else on the host root the VM
// might run a stale copy. Static (CGO_ENABLED=0), so it does not depend on
// which libc the VM's root happens to have.
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	build, _ := builds.LoadOrStore(pkg, sync.OnceValues(func() (string, error) {
		bin := filepath.Join(lab.repo, "bin", path.Base(pkg))
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Dir = lab.repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build -o %s %s: %v\n%s", bin, pkg, err, out)
		}
		return bin, nil
	}))
	bin, err := build.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// exitCode returns the exit code a command's Wait error stands for: 0 for
// nil, -1 when the command did not exit normally (or did not run).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}
