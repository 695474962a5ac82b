package shmring

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The peer process is this test binary run again with peerEnv set to
// its part: "echo" or "hang".
const peerEnv = "SHMRING_TEST_PEER"

func TestMain(m *testing.M) {
	if part := os.Getenv(peerEnv); part != "" {
		if err := runPeer(part); err != nil {
			fmt.Fprintln(os.Stderr, "peer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	base := runtime.NumGoroutine()
	code := m.Run()
	// The fuzzing engine keeps goroutines of its own to the end.
	if f := flag.Lookup("test.fuzz"); code == 0 && (f == nil || f.Value.String() == "") {
		code = checkGoroutines(base)
	}
	os.Exit(code)
}

// checkGoroutines fails the run if goroutines started by the tests are
// still there once those that were finishing have had time to end.
func checkGoroutines(base int) int {
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutines leaked:\n%s\n", buf[:runtime.Stack(buf, true)])
			return 1
		}
		runtime.Gosched()
	}
	return 0
}

// runPeer is the peer process: it receives two rings (in, out) and a
// region over the unix socket on descriptor 3, attaches them, writes
// the region range it was told to, and then either echoes every record
// of in onto out until in's producer closes ("echo"), waits to be
// killed ("hang"), or counts records (sink).
func runPeer(part string) error {
	f := os.NewFile(3, "control")
	c, err := net.FileConn(f)
	if err != nil {
		return err
	}
	conn := c.(*net.UnixConn)
	buf := make([]byte, 64)
	_, files, err := RecvFiles(conn, buf, 6)
	if err != nil {
		return err
	}
	if len(files) != 6 {
		return fmt.Errorf("%d ring files", len(files))
	}
	in, err := Attach(files[:3])
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := Attach(files[3:])
	if err != nil {
		return err
	}
	defer out.Close()
	// The region: its id, an offset and a length, and its memfd.
	n, files, err := RecvFiles(conn, buf, 1)
	if err != nil || n != 24 || len(files) != 1 {
		return fmt.Errorf("region message: %d bytes, %d files, %v", n, len(files), err)
	}
	tab := NewRegionTable(1, 1<<20)
	defer tab.Close()
	id := binary.NativeEndian.Uint64(buf[0:])
	if err := tab.Add(id, files[0]); err != nil {
		return err
	}
	files[0].Close()
	mem, err := tab.Bytes(id, binary.NativeEndian.Uint64(buf[8:]), binary.NativeEndian.Uint64(buf[16:]))
	if err != nil {
		return err
	}
	pattern(mem, 42)
	if _, err := conn.Write([]byte("ready")); err != nil {
		return err
	}
	ctx := context.Background()
	rec := make([]byte, in.MaxRecord())
	switch part {
	case "hang":
		_, err := conn.Read(buf)
		return fmt.Errorf("control read returned: %v", err)
	case "sink", "sinkseq":
		return sink(ctx, part, in, conn, rec)
	}
	for {
		n, err := in.Read(ctx, rec)
		if errors.Is(err, ErrPeerClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := out.Write(ctx, rec[:n]); err != nil {
			return err
		}
	}
}

// peer starts the peer process and hands it two rings of the given
// capacity and a region buffer; it returns the rings (to the peer, from the peer), the
// control connection and the command.
func peer(t testing.TB, part string, capacity int) (to, from *Ring, conn *net.UnixConn, cmd *exec.Cmd) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control-peer")
	c, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn = c.(*net.UnixConn)
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peerEnv+"="+part)
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	t.Cleanup(func() {
		conn.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if to, err = Create(capacity); err != nil {
		t.Fatal(err)
	}
	if from, err = Create(capacity); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		to.Close()
		from.Close()
	})
	if err := SendFiles(conn, []byte("rings"), append(to.Files(), from.Files()...)); err != nil {
		t.Fatal(err)
	}
	g, err := NewRegion(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if _, err := g.Alloc(100); err != nil { // so that the buffer is not at 0
		t.Fatal(err)
	}
	b, err := g.Alloc(5000)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := g.Offset(b)
	msg := make([]byte, 24)
	binary.NativeEndian.PutUint64(msg[0:], g.ID())
	binary.NativeEndian.PutUint64(msg[8:], uint64(off))
	binary.NativeEndian.PutUint64(msg[16:], uint64(len(b)))
	if err := SendFiles(conn, msg, []*os.File{g.File()}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "ready" {
		t.Fatalf("peer not ready: %q %v", buf[:n], err)
	}
	// What the peer wrote through its own mapping of the region.
	checkPattern(t, b, 42)
	return to, from, conn, cmd
}

// Two processes: records of every size go to the peer and come back
// through a second ring; the producer's Close ends the stream on both.
func TestTwoProcesses(t *testing.T) {
	to, from, _, cmd := peer(t, "echo", 1<<16)
	ctx := context.Background()
	const count = 5000
	size := func(i int) int { return (i * 7919) % (to.MaxRecord() + 1) }
	var wg sync.WaitGroup
	wg.Add(1)
	werr := make(chan error, 1)
	go func() {
		defer wg.Done()
		buf := make([]byte, to.MaxRecord())
		for i := range count {
			pattern(buf[:size(i)], uint64(i))
			if err := to.Write(ctx, buf[:size(i)]); err != nil {
				werr <- err
				return
			}
		}
		werr <- to.Close()
	}()
	buf := make([]byte, from.MaxRecord())
	for i := range count {
		n, err := from.Read(ctx, buf)
		if err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if n != size(i) {
			t.Fatalf("echo %d: %d bytes, want %d", i, n, size(i))
		}
		checkPattern(t, buf[:n], uint64(i))
	}
	if _, err := from.Read(ctx, buf); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("after the echoes: %v, want ErrPeerClosed", err)
	}
	wg.Wait()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("peer: %v", err)
	}
}

// A peer killed with SIGKILL closes nothing in the rings; the end of its
// control connection, turned into Shutdown, ends the calls blocked on
// it.
func TestPeerKilled(t *testing.T) {
	to, from, conn, cmd := peer(t, "hang", 1<<16)
	fill(to)
	ctx := context.Background()
	r := result(func() error { _, err := from.Read(ctx, nil); return err })
	w := result(func() error { return to.Write(ctx, make([]byte, 100)) })
	untilSleeping(t, consSleeping(from), r)
	untilSleeping(t, prodSleeping(to), w)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := conn.Read(make([]byte, 8))
		if err == io.EOF {
			from.Shutdown()
			to.Shutdown()
		}
	}()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := await(t, r); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Read: %v, want ErrPeerClosed", err)
	}
	if err := await(t, w); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Write: %v, want ErrPeerClosed", err)
	}
	wg.Wait()
}

// sink counts the records that arrive through in ("sink") or as
// messages on the control socket ("sinkseq", ended by a 1-byte one),
// and then sends the count on the control socket.
func sink(ctx context.Context, part string, in *Ring, conn *net.UnixConn, buf []byte) error {
	var count uint64
	for {
		var err error
		if part == "sink" {
			_, err = in.Read(ctx, buf)
			if errors.Is(err, ErrPeerClosed) {
				break
			}
		} else {
			var n int
			n, err = conn.Read(buf)
			if err == nil && n == 1 {
				break
			}
		}
		if err != nil {
			return err
		}
		count++
	}
	var msg [8]byte
	binary.NativeEndian.PutUint64(msg[:], count)
	_, err := conn.Write(msg[:])
	return err
}
