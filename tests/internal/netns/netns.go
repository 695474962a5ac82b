package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// runDir is where iproute2 keeps the bind mounts that name namespaces.
const runDir = "/var/run/netns"

// prefix starts the name of every namespace this package creates; the
// process id follows, so Sweep can tell whose namespaces are stale.
const prefix = "gd"

var seq atomic.Uint32 // names namespaces and interfaces uniquely within the process

// NS is a named network namespace with its loopback interface up.
type NS struct {
	Name string

	closeOnce sync.Once
	closeErr  error
}

// New creates a namespace named after the process and a counter, with lo
// up (127.0.0.1 works inside it).
func New() (*NS, error) {
	name := fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), seq.Add(1))
	if _, err := run("ip", "netns", "add", name); err != nil {
		return nil, err
	}
	ns := &NS{Name: name}
	if _, err := ns.IP("link", "set", "lo", "up"); err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// Close deletes the namespace. Interfaces inside it go with it (a veth
// pair dies when either end does); processes still running inside keep it
// alive until they exit, so stop them first.
func (ns *NS) Close() error {
	ns.closeOnce.Do(func() {
		_, ns.closeErr = run("ip", "netns", "delete", ns.Name)
	})
	return ns.closeErr
}

// IP runs `ip -n <ns> args...` and returns its output.
func (ns *NS) IP(args ...string) (string, error) {
	return run("ip", append([]string{"-n", ns.Name}, args...)...)
}

// Run runs a program inside the namespace to completion and returns its
// combined output (tc, ss, sysctl: anything that acts on "its" namespace).
func (ns *NS) Run(name string, args ...string) (string, error) {
	return run("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Command returns a command that runs name inside the namespace. `ip
// netns exec` execs the program in place, so cmd.Process is the program
// itself: signals sent to it (Kill) reach the program, not a wrapper.
func (ns *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns.Name, name}, args...)...)
}

// Do runs fn on an OS thread that has entered the namespace. Sockets that
// fn creates belong to the namespace for their whole life, so a test can
// listen or dial inside a namespace without a child process; goroutines
// that fn starts do not inherit the namespace. The thread is discarded
// afterwards rather than trusted back to the scheduler.
func (ns *NS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the thread exits with this goroutine, so no
		// other goroutine ever runs in the namespace by accident.
		runtime.LockOSThread()
		fd, err := unix.Open(runDir+"/"+ns.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", ns.Name, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns.Name, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Sweep deletes the namespaces that earlier processes of this package
// left behind (a test binary killed before its cleanups ran): those whose
// creator process no longer exists.
func Sweep() {
	ents, err := os.ReadDir(runDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		pidStr, _, ok := strings.Cut(strings.TrimPrefix(name, prefix), "-")
		if !ok || !strings.HasPrefix(name, prefix) {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			run("ip", "netns", "delete", name)
		}
	}
}

// Available reports why this process cannot build namespaces, or nil if it
// can: it needs root and iproute2.
func Available() error {
	availOnce.Do(func() {
		switch {
		case runtime.GOOS != "linux":
			availErr = errors.New("network namespaces need Linux")
		case os.Geteuid() != 0:
			availErr = errors.New("network namespaces need root (run the tests as root, as CI does)")
		default:
			for _, bin := range []string{"ip", "tc"} {
				if _, err := exec.LookPath(bin); err != nil {
					availErr = fmt.Errorf("%s not found (scripts/install-deps.sh installs iproute2)", bin)
					return
				}
			}
			ns, err := New()
			if err != nil {
				availErr = fmt.Errorf("cannot create a network namespace: %w", err)
				return
			}
			ns.Close()
			Sweep()
		}
	})
	return availErr
}

var (
	availOnce sync.Once
	availErr  error
)

// Require skips the test with the reason when namespaces are not available.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("skipping: %v", err)
	}
}

// run runs a command and returns its combined output, folding the output
// into the error when it fails.
func run(name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// runStdin is run with input on stdin.
func runStdin(input, name string, args ...string) error {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(input)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
