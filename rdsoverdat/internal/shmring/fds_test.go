package shmring

import (
	"errors"
	"net"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// socketpair returns two connected unix sockets of the given type.
func socketpair(t testing.TB, typ int) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "socketpair")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	a, b := conn(fds[0]), conn(fds[1])
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

func openFDs(t *testing.T) int {
	t.Helper()
	names, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

// A ring's files cross a unix socket and the far end attaches.
func TestSendFilesRing(t *testing.T) {
	a, b := socketpair(t, unix.SOCK_SEQPACKET)
	prod, err := Create(MinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := SendFiles(a, []byte("ring"), prod.Files()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, files, err := RecvFiles(b, buf, 3)
	if err != nil || string(buf[:n]) != "ring" || len(files) != 3 {
		t.Fatalf("RecvFiles: %q %d files %v", buf[:n], len(files), err)
	}
	cons, err := Attach(files)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	if !prod.TryWrite([]byte("across")) {
		t.Fatal("TryWrite")
	}
	if n, ok := cons.TryRead(buf); !ok || string(buf[:n]) != "across" {
		t.Fatalf("TryRead: %q %v", buf[:n], ok)
	}
}

// A message with more descriptors than asked for is refused and none of
// them is left open.
func TestRecvFilesTooMany(t *testing.T) {
	a, b := socketpair(t, unix.SOCK_SEQPACKET)
	r, err := Create(MinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := openFDs(t)
	if err := SendFiles(a, []byte("x"), r.Files()); err != nil {
		t.Fatal(err)
	}
	_, files, err := RecvFiles(b, make([]byte, 4), 2)
	if !errors.Is(err, ErrBadFiles) || files != nil {
		t.Fatalf("RecvFiles: %d files, %v", len(files), err)
	}
	if after := openFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
	if err := SendFiles(a, nil, r.Files()); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SendFiles without a byte: %v", err)
	}
	if _, _, err := RecvFiles(b, nil, MaxFiles+1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("RecvFiles of too many: %v", err)
	}
}
