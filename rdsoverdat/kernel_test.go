package rdsoverdat

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// The same code over both backends: each test below runs once on an
// rdsoverdat Stack and once on a kernel Stack (Config{Kernel: true}), with
// nothing else changed. The kernel half skips where the host has no
// AF_RDS; tests/interop runs it in the lab VM, whose kernel has rds loaded
// (TestRDSKernelBackendInVM).

func backends(t *testing.T, f func(t *testing.T, st *Stack)) {
	t.Run("rdsoverdat", func(t *testing.T) {
		leakCheck(t)
		f(t, newTestStack(t, Config{}))
	})
	t.Run("kernel", func(t *testing.T) {
		requireKernel(t)
		f(t, newTestStack(t, Config{Kernel: true}))
	})
	t.Run("daemon", func(t *testing.T) {
		leakCheck(t)
		st, _ := daemonStack(t, Config{})
		f(t, st)
	})
}

func requireKernel(t *testing.T) {
	t.Helper()
	if err := KernelAvailable(); err != nil {
		t.Skipf("the host kernel has no AF_RDS (%v): `modprobe rds` gives it (scripts/install-deps.sh tries; "+
			"not rds_tcp, whose *:16385 listener breaks this package's tcp tests); "+
			"tests/interop runs these tests in the lab VM (TestRDSKernelBackendInVM)", err)
	}
}

func TestBackendSendRecv(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		big := []Option{SendBuffer(4 << 20), RecvBuffer(4 << 20)}
		a := mustBind(t, st, ap(as[0], 0), big...)
		b := mustBind(t, st, ap(as[1], 4000), big...)
		if got := b.BoundAddr(); got != ap(as[1], 4000) {
			t.Fatalf("BoundAddr = %v", got)
		}
		buf := make([]byte, 1<<20+1)
		for i, n := range []int{0, 1, 48, 4096, 65536, 1 << 20} {
			p := bytes.Repeat([]byte{byte(i + 1)}, n)
			if got, err := a.SendTo(p, b.BoundAddr(), 0); err != nil || got != n {
				t.Fatalf("SendTo %d: %d, %v", n, got, err)
			}
			got, from := recvTimeout(t, b, buf, 10*time.Second)
			if got != n || from != a.BoundAddr() || !bytes.Equal(buf[:got], p) {
				t.Fatalf("%d bytes: got %d from %v", n, got, from)
			}
			if _, err := b.WriteTo(p[:min(n, 10)], Addr(from)); err != nil {
				t.Fatal(err)
			}
			if got, _ := recvTimeout(t, a, buf, 10*time.Second); got != min(n, 10) {
				t.Fatalf("reply: %d bytes", got)
			}
		}
	})
}

func TestBackendTruncPeek(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0))
		if _, err := a.SendTo(make([]byte, 100), b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Wait(context.Background(), PollIn); err != nil {
			t.Fatal(err)
		}
		if ev := b.Poll(); ev&PollIn == 0 || ev&PollOut == 0 {
			t.Fatalf("Poll = %#x", ev)
		}
		m := Msg{Data: make([]byte, 10)}
		if n, err := b.RecvMsg(&m, MsgPeek); err != nil || n != 10 || m.Flags&MsgTrunc == 0 {
			t.Fatalf("peek: %d %v flags %#x", n, err, m.Flags)
		}
		if n, err := b.RecvMsg(&m, MsgTrunc); err != nil || n != 100 {
			t.Fatalf("MSG_TRUNC: %d %v", n, err)
		}
		if _, err := b.RecvMsg(&m, MsgDontWait); !errors.Is(err, syscall.EAGAIN) {
			t.Fatalf("empty queue: %v", err)
		}
		// A zero-length buffer takes nothing and says so.
		if _, err := a.SendTo([]byte("x"), b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		b.SetReadDeadline(time.Now().Add(5 * time.Second))
		m = Msg{}
		if n, err := b.RecvMsg(&m, 0); err != nil || n != 0 || m.Flags&MsgTrunc == 0 {
			t.Fatalf("zero buffer: %d %v flags %#x", n, err, m.Flags)
		}
	})
}

func TestBackendErrors(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		u := st.Socket()
		defer u.Close()
		_, err := u.SendTo([]byte("x"), ap(as[1], 9), 0)
		wantErrno(t, err, syscall.ENOTCONN)
		wantErrno(t, u.SetOption(CancelSentTo(ap(as[1], 9))), syscall.ENOTCONN)
		var tr TransportOption
		if err := u.Option(&tr); err != nil || TransportType(tr) != TransNone {
			t.Fatalf("SO_RDS_TRANSPORT of an unbound socket: %v %v", tr, err)
		}
		wantErrno(t, u.Bind(ap(as[0], 1)), syscall.EINVAL)
		a := mustBind(t, st, ap(as[0], 4001))
		wantErrno(t, a.Bind(ap(as[0], 4002)), syscall.EINVAL)
		wantErrno(t, st.Socket().Bind(ap(as[0], 4001)), syscall.EADDRINUSE)
		_, err = a.SendTo(make([]byte, 1<<20+1), ap(as[1], 9), 0)
		wantErrno(t, err, syscall.EMSGSIZE)
		if !errors.Is(err, ErrMsgTooBig) {
			t.Errorf("above 1 MiB: %v is not ErrMsgTooBig", err)
		}
		if err := a.SetOption(CancelSentTo(ap(as[1], 9))); err != nil {
			t.Fatal(err)
		}
		if err := a.SetOption(SendBuffer(1 << 20)); err != nil {
			t.Fatal(err)
		}
		var sb SendBuffer
		if err := a.Option(&sb); err != nil || sb != 1<<20 {
			t.Fatalf("SO_SNDBUF = %d, %v", sb, err)
		}
	})
}

func TestBackendTimeoutsAndClose(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(1)
		a := mustBind(t, st, ap(as[0], 0), RecvTimeout(50*time.Millisecond))
		buf := make([]byte, 8)
		_, _, err := a.ReadFrom(buf)
		wantErrno(t, err, syscall.ETIMEDOUT)
		a.SetOption(RecvTimeout(0))
		a.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, _, err := a.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("deadline: %v", err)
		}
		a.SetReadDeadline(time.Time{})
		done := make(chan error, 1)
		go func() {
			_, _, err := a.ReadFrom(buf)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let it block
		a.Close()
		select {
		case err := <-done:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("after Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not unblock ReadFrom")
		}
	})
}

// A ping to the socket's own address. (Between two local addresses the
// kernel's loopback transport delivers the pong on the pinging
// connection, i.e. back to the pinged address, so the pinger never sees
// it; rdsoverdat answers there too, see TestPing.)
func TestBackendPing(t *testing.T) {
	backends(t, func(t *testing.T, st *Stack) {
		as := testAddrs(1)
		a := mustBind(t, st, ap(as[0], 0))
		for range 3 {
			if _, err := a.SendTo(nil, ap(as[0], 0), 0); err != nil {
				t.Fatal(err)
			}
			n, from := recvTimeout(t, a, make([]byte, 8), 5*time.Second)
			if n != 0 || from != ap(as[0], 0) {
				t.Fatalf("pong: %d bytes from %v", n, from)
			}
		}
	})
}
