package rdsoverdat

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// transports runs a test over loop, tcp and dat (on the mem provider).
func transports(t *testing.T, f func(t *testing.T, st *Stack)) {
	t.Run("loop", func(t *testing.T) {
		leakCheck(t)
		f(t, newTestStack(t, Config{}))
	})
	t.Run("tcp", func(t *testing.T) {
		leakCheck(t)
		f(t, tcpStack(t))
	})
	t.Run("dat", func(t *testing.T) {
		leakCheck(t)
		f(t, datStack(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem"}))
	})
	t.Run("daemon-tcp", func(t *testing.T) {
		leakCheck(t)
		st, _ := daemonStack(t, Config{Transports: []Transport{TCP(TCPConfig{})}})
		f(t, st)
	})
	t.Run("daemon-dat", func(t *testing.T) {
		leakCheck(t)
		st, _ := daemonStack(t, Config{Transports: []Transport{DAT(DATConfig{Registry: registryOn(mem.New()), IA: "mem"})}})
		f(t, st)
	})
}

func TestSendErrors(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		s := mustBind(t, st, ap(as[0], 0), SendBuffer(10000))
		dst := ap(as[1], 7)
		for _, c := range []struct {
			name  string
			to    netip.AddrPort
			size  int
			flags MsgFlags
			want  syscall.Errno
		}{
			{"above sndbuf", dst, 10001, 0, syscall.EMSGSIZE},
			{"MSG_OOB", dst, 1, MsgOOB, syscall.EOPNOTSUPP},
			{"MSG_PEEK", dst, 1, MsgPeek, syscall.EOPNOTSUPP},
			{"broadcast", netip.MustParseAddrPort("255.255.255.255:7"), 1, 0, syscall.EINVAL},
			{"multicast", netip.MustParseAddrPort("239.1.2.3:7"), 1, 0, syscall.EINVAL},
			{"INADDR_ANY", netip.MustParseAddrPort("0.0.0.0:7"), 1, 0, syscall.EINVAL},
			{"IPv6", netip.MustParseAddrPort("[2001:db8::1]:7"), 1, 0, syscall.EINVAL},
		} {
			_, err := s.SendTo(make([]byte, c.size), c.to, c.flags)
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if _, err := s.SendTo(make([]byte, 10001), dst, 0); errors.Is(err, ErrMsgTooBig) {
			t.Errorf("above SO_SNDBUF, below 1 MiB: %v is ErrMsgTooBig", err)
		}
		big := mustBind(t, st, ap(as[0], 0), SendBuffer(4<<20))
		_, err := big.SendTo(make([]byte, 1<<20+1), dst, 0)
		wantErrno(t, err, syscall.EMSGSIZE)
		var errno syscall.Errno
		if !errors.Is(err, ErrMsgTooBig) || !errors.As(err, &errno) || errno != syscall.EMSGSIZE {
			t.Errorf("above 1 MiB: %v, want ErrMsgTooBig and EMSGSIZE (errors.As: %v)", err, errno)
		}
		_, err = big.SendMsg(&Msg{Data: []byte("x"), Addr: dst, Control: []ControlMessage{CongUpdate(1)}}, 0)
		wantErrno(t, err, syscall.EINVAL)
	})
}

// A destination that never acknowledges: a TCP peer address with nobody
// listening. Messages stay queued, so SO_SNDBUF fills.
func TestSendQueueFull(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	s := mustBind(t, st, ap(as[0], 0), SendBuffer(3000))
	dst := ap(as[1], 9) // no node on as[1]: the connect keeps failing
	for i := range 3 {
		if _, err := s.SendTo(make([]byte, 1000), dst, MsgDontWait); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if snd, _ := s.Buffered(); snd != 3000 {
		t.Fatalf("buffered %d", snd)
	}
	if ev := s.Poll(); ev&PollOut != 0 {
		t.Errorf("POLLOUT with a full send queue: %#x", ev)
	}
	_, err := s.SendTo(nil, dst, MsgDontWait)
	wantErrno(t, err, syscall.EAGAIN)
	// Blocking with SO_SNDTIMEO: ETIMEDOUT.
	s.SetOption(SendTimeout(30 * time.Millisecond))
	t0 := time.Now()
	_, err = s.SendTo(nil, dst, 0)
	wantErrno(t, err, syscall.ETIMEDOUT)
	if d := time.Since(t0); d < 25*time.Millisecond {
		t.Errorf("returned after %v", d)
	}
	// Write deadline: os.ErrDeadlineExceeded.
	s.SetOption(SendTimeout(0))
	s.SetWriteDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err = s.SendTo(nil, dst, 0); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	s.SetWriteDeadline(time.Time{})
	// A blocked sender wakes up when room appears (cancel) or on close.
	done := make(chan error, 1)
	go func() { _, err := s.SendTo([]byte("late"), dst, 0); done <- err }()
	eventually(t, 5*time.Second, "the sender waiting for room", func() bool { return s.sock().boundNode().sndBlocked.Load() > 0 })
	if err := s.SetOption(CancelSentTo(dst)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocked send after cancel: %v", err)
	}
	s.SetOption(CancelSentTo(dst))
	if snd, _ := s.Buffered(); snd != 0 {
		t.Errorf("after cancel: %d bytes accounted", snd)
	}
	if st.nodeAt(as[0]).Stats().SendCanceled != 4 {
		t.Errorf("canceled %d", st.nodeAt(as[0]).Stats().SendCanceled)
	}
}

// SO_SNDBUF admission is the kernel's (rds_send_queue_rm): a send is
// admitted while the bytes already queued are below SO_SNDBUF, whatever
// its own size (at most SO_SNDBUF, else EMSGSIZE), so the last message
// may take the queue past the limit, up to twice it less one byte; from
// then on every send, even an empty one, gets EAGAIN and POLLOUT is off
// until acks bring the queue below the limit again.
func TestSendBufferOvershoot(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	s := mustBind(t, st, ap(as[0], 0), SendBuffer(1000))
	dst := ap(as[1], 9) // no node on as[1]: nothing is ever acknowledged
	queued := func(want int) {
		t.Helper()
		if snd, _ := s.Buffered(); snd != want {
			t.Fatalf("queued %d bytes, want %d", snd, want)
		}
	}
	send := func(n int, want error) {
		t.Helper()
		_, err := s.SendTo(make([]byte, n), dst, MsgDontWait)
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Fatalf("send of %d bytes: %v, want %v", n, err, want)
		}
	}
	send(1001, syscall.EMSGSIZE) // above SO_SNDBUF: never
	send(600, nil)
	if s.Poll()&PollOut == 0 {
		t.Fatal("no POLLOUT with 600 of 1000 bytes queued")
	}
	send(600, nil) // 600 < 1000 queued before it: admitted, 1200 after
	queued(1200)
	if s.Poll()&PollOut != 0 {
		t.Fatal("POLLOUT with 1200 of 1000 bytes queued")
	}
	send(0, syscall.EAGAIN)
	send(1, syscall.EAGAIN)
	queued(1200)

	// The largest overshoot: 999 queued, then a message of SO_SNDBUF.
	if err := s.SetOption(CancelSentTo(dst)); err != nil {
		t.Fatal(err)
	}
	queued(0)
	send(999, nil)
	send(1000, nil)
	queued(1999)
	send(0, syscall.EAGAIN)
	if err := s.SetOption(CancelSentTo(dst)); err != nil {
		t.Fatal(err)
	}
	// Exactly full is full too.
	send(1000, nil)
	queued(1000)
	send(0, syscall.EAGAIN)
}

func TestZeroLengthAndNoSocket(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0))
		// To a port without a socket: accepted, silently dropped there.
		// b's port is picked at random, so the unbound port is chosen
		// beside it: as[1] has no other socket.
		noSock := uint16(9999)
		if b.BoundAddr().Port() == noSock {
			noSock++
		}
		if n, err := a.SendTo([]byte("void"), ap(as[1], noSock), 0); err != nil || n != 4 {
			t.Fatal(n, err)
		}
		if _, err := a.SendTo(nil, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		n, from := recvTimeout(t, b, make([]byte, 10), 5*time.Second)
		if n != 0 || from != a.BoundAddr() {
			t.Fatalf("zero-length: %d bytes from %v", n, from)
		}
		eventually(t, 5*time.Second, "drop counted", func() bool {
			return st.nodeAt(as[1]).Stats().RecvDropNoSock == 1
		})
		eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
	})
}

// Messages from one socket to one destination arrive in order; several
// senders and destinations interleave freely.
func TestOrderingPerDestination(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(3)
		const N = 300
		var snd []*Socket
		for i := range 3 {
			snd = append(snd, mustBind(t, st, ap(as[i%2], 0)))
		}
		rcv := []*Socket{mustBind(t, st, ap(as[1], 0)), mustBind(t, st, ap(as[2], 0))}
		errc := make(chan error, len(snd))
		for i, s := range snd {
			go func() {
				for k := range N {
					for _, r := range rcv {
						if _, err := s.SendTo([]byte(fmt.Sprintf("%d %d", i, k)), r.BoundAddr(), 0); err != nil {
							errc <- err
							return
						}
					}
				}
				errc <- nil
			}()
		}
		for _, r := range rcv {
			next := make([]int, len(snd))
			buf := make([]byte, 32)
			for range N * len(snd) {
				n, _ := recvTimeout(t, r, buf, 5*time.Second)
				var i, k int
				fmt.Sscanf(string(buf[:n]), "%d %d", &i, &k)
				if k != next[i] {
					t.Fatalf("from sender %d: got %d, want %d", i, k, next[i])
				}
				next[i]++
			}
		}
		for range snd {
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
		}
	})
}
