package shmring

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"

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
	os.Exit(m.Run())
}

// runPeer is the peer process: it receives two rings (in, out) and a
// region over the unix socket on descriptor 3, attaches them, writes
// the region range it was told to, and then either echoes every record
// of in onto out until in's producer closes ("echo"), or waits to be
// killed ("hang").
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
	if part == "hang" {
		_, err := conn.Read(buf)
		return fmt.Errorf("control read returned: %v", err)
	}
	ctx := context.Background()
	rec := make([]byte, in.MaxRecord())
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

// peer starts the peer process and hands it two rings and a region
// buffer; it returns the rings (to the peer, from the peer), the
// control connection and the command.
func peer(t testing.TB, part string) (to, from *Ring, conn *net.UnixConn, cmd *exec.Cmd) {
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
	if to, err = Create(1 << 16); err != nil {
		t.Fatal(err)
	}
	if from, err = Create(1 << 16); err != nil {
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
	to, from, _, cmd := peer(t, "echo")
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
	to, from, conn, cmd := peer(t, "hang")
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
