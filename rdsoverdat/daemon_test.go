package rdsoverdat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
	"github.com/godapl/godapl/verbs/mem"
)

// startDaemon serves a Stack of cfg on a new socket path; stop closes
// the daemon (the Stack stays until cleanup).
func startDaemon(t testing.TB, cfg Config, path string) (d *Daemon, stop func()) {
	t.Helper()
	srv := NewStack(cfg)
	d, err := NewDaemon(srv, DaemonConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := ListenDaemon(path, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		d.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
	t.Cleanup(func() { stop(); srv.Close() })
	return d, stop
}

// A daemon that goes away makes every blocked call return ErrDaemonLost
// at once, and every later call on the old sockets; a new daemon on the
// same path serves new sockets.
func TestDaemonRestart(t *testing.T) {
	leakCheck(t)
	path := filepath.Join(t.TempDir(), "rdsd.sock")
	_, stop := startDaemon(t, Config{}, path)
	st := newTestStack(t, Config{Daemon: path})
	as := testAddrs(1)
	a := mustBind(t, st, ap(as[0], 0))
	errc := make(chan error, 2)
	go func() {
		_, _, err := a.ReadFrom(make([]byte, 10))
		errc <- err
	}()
	go func() {
		_, err := a.Wait(context.Background(), PollIn)
		errc <- err
	}()
	eventually(t, 5*time.Second, "the blocked calls to reach the daemon", func() bool {
		return st.daemonPending(a) == 2
	})
	stop()
	for range 2 {
		select {
		case err := <-errc:
			if !errors.Is(err, ErrDaemonLost) || !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("blocked call: %v, want ErrDaemonLost", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a blocked call hangs after the daemon went away")
		}
	}
	if _, err := a.SendTo([]byte("x"), ap(as[0], 9), 0); !errors.Is(err, ErrDaemonLost) {
		t.Fatalf("send on a socket of the old daemon: %v", err)
	}
	if err := a.Bind(ap(as[0], 0)); !errors.Is(err, ErrDaemonLost) {
		t.Fatalf("bind on a socket of the old daemon: %v", err)
	}

	startDaemon(t, Config{}, path)
	b := mustBind(t, st, ap(as[0], 0))
	c := mustBind(t, st, ap(as[0], 0))
	if _, err := b.SendTo([]byte("again"), c.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if n, from := recvTimeout(t, c, buf, 5*time.Second); string(buf[:n]) != "again" || from != b.BoundAddr() {
		t.Fatalf("after restart: %q from %v", buf[:n], from)
	}
}

// daemonPending counts a daemon socket's calls waiting for replies.
func (st *Stack) daemonPending(s *Socket) int {
	k := s.b.(*daemonSocket)
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.calls)
}

// Without a daemon, a daemon Stack's sockets fail every call with the
// dial's error; a closed socket's calls fail with net.ErrClosed.
func TestDaemonAbsent(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{Daemon: filepath.Join(t.TempDir(), "none.sock")})
	s := st.Socket()
	if err := s.Bind(ap(testAddrs(1)[0], 0)); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("bind without a daemon: %v", err)
	}
	s.Close()
	if _, err := st.DaemonInfo(); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("DaemonInfo without a daemon: %v", err)
	}
}

// A Wait canceled by its context returns the context's error and leaves
// the socket usable; a Wait of a closed socket returns net.ErrClosed.
func TestDaemonWaitCancel(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(1)
	a := mustBind(t, st, ap(as[0], 0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := a.Wait(ctx, PollIn); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait: %v", err)
	}
	b := mustBind(t, st, ap(as[0], 0))
	if _, err := b.SendTo([]byte("x"), a.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if ev, err := a.Wait(context.Background(), PollIn); err != nil || ev&PollIn == 0 {
		t.Fatalf("Wait after cancel: %v %v", ev, err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := b.Wait(context.Background(), PollIn)
		errc <- err
	}()
	eventually(t, 5*time.Second, "the wait to reach the daemon", func() bool { return st.daemonPending(b) == 1 })
	b.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Wait across Close: %v", err)
	}
}

// A malformed or hostile record closes that client's connection (and
// its socket) and nothing else: the daemon serves on.
func TestDaemonHostileClient(t *testing.T) {
	leakCheck(t)
	st, d := daemonStack(t, Config{})
	as := testAddrs(1)
	good := mustBind(t, st, ap(as[0], 0))
	path := st.cfg.Daemon
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"short", []byte{1, 2, 3}},
		{"unknown op", func() []byte { r := rdsdproto.New(nil, rdsdproto.OpPoll, 1, 0); r[0] = 200; return r }()},
		{"a reply", func() []byte {
			r := rdsdproto.New(nil, rdsdproto.OpPoll, 1, 0)
			r.SetFlags(rdsdproto.FlagReply)
			return r
		}()},
		{"send body shorter than N", func() []byte {
			r := rdsdproto.New(nil, rdsdproto.OpSend, 1, 4)
			r.SetN(100)
			return r
		}()},
		{"send cmsgs past the body", func() []byte { r := rdsdproto.New(nil, rdsdproto.OpSend, 1, 4); r.SetC(9); return r }()},
		{"bad cmsg", func() []byte {
			b := rdsdproto.AppendCmsg(nil, 77, []byte{1})
			r := rdsdproto.New(nil, rdsdproto.OpSend, 1, len(b))
			copy(r.Body(), b)
			r.SetC(uint64(len(b)))
			return r
		}()},
		{"recv room past the limit", func() []byte { r := rdsdproto.New(nil, rdsdproto.OpRecv, 1, 0); r.SetN(1 << 30); return r }()},
		{"memory of no region", func() []byte {
			r := rdsdproto.New(nil, rdsdproto.OpGetMR, 1, rdsdproto.MemLen)
			rdsdproto.PutMem(r.Body(), rdsdproto.Mem{Region: 5, Len: 8})
			return r
		}()},
		{"region without a descriptor", rdsdproto.New(nil, rdsdproto.OpRegion, 1, 0)},
		{"credit for messages never handed", func() []byte {
			r := rdsdproto.New(nil, rdsdproto.OpRecv, 0, 0)
			r.SetB(recvCredit)
			r.SetC(5)
			return r
		}()},
		{"recv with unknown flags", func() []byte { r := rdsdproto.New(nil, rdsdproto.OpRecv, 1, 0); r.SetB(1 << 5); return r }()},
		{"unknown option", func() []byte { r := rdsdproto.New(nil, rdsdproto.OpOption, 1, 0); r.SetA(99); return r }()},
	} {
		uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := uc.Write(c.rec); err != nil {
			t.Fatal(err)
		}
		uc.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := uc.Read(make([]byte, rdsdproto.MaxRecord))
		uc.Close()
		if err == nil && n > 0 || err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the daemon answered (%d bytes, %v) instead of closing", c.name, n, err)
		}
	}
	if ev := good.Poll(); ev&PollOut == 0 {
		t.Fatalf("the well-behaved client's socket after the hostile ones: %v", ev)
	}
	eventually(t, 5*time.Second, "hostile clients released", func() bool { return d.Clients() == 1 })
}

// The client half of TestDaemonClientKilled, run in a child process: it
// binds RDSD_TEST_BIND through RDSD_TEST_DAEMON, sends messages nobody
// reads to RDSD_TEST_DST, says "ready" and waits to be killed.
func TestDaemonClientChild(t *testing.T) {
	path := os.Getenv("RDSD_TEST_DAEMON")
	if path == "" {
		t.Skip("run by TestDaemonClientKilled")
	}
	st := NewStack(Config{Daemon: path})
	s := st.Socket()
	if err := s.Bind(netip.MustParseAddrPort(os.Getenv("RDSD_TEST_BIND"))); err != nil {
		t.Fatal(err)
	}
	dst := netip.MustParseAddrPort(os.Getenv("RDSD_TEST_DST"))
	for range 5 {
		if _, err := s.SendTo(make([]byte, 100), dst, 0); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Println("ready")
	select {} // until SIGKILL
}

// A client killed with SIGKILL releases its socket: the daemon sees the
// connection end, closes the socket (its port is free again) and drops
// its connection state.
func TestDaemonClientKilled(t *testing.T) {
	leakCheck(t)
	st, d := daemonStack(t, Config{})
	as := testAddrs(2)
	sink := mustBind(t, st, ap(as[1], 0), RecvBuffer(1<<20))
	port := 4000 + os.Getpid()%1000
	bind := ap(as[0], uint16(port))
	cmd := exec.Command(os.Args[0], "-test.run=^TestDaemonClientChild$", "-test.v")
	cmd.Env = append(os.Environ(), "RDSD_TEST_DAEMON="+st.cfg.Daemon, "RDSD_TEST_BIND="+bind.String(),
		"RDSD_TEST_DST="+sink.BoundAddr().String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Wait()
		t.Fatal("the child never got ready")
	}
	if d.Clients() != 2 {
		t.Fatalf("clients %d, want 2", d.Clients())
	}
	taken := st.Socket()
	defer taken.Close()
	wantErrno(t, taken.Bind(bind), syscall.EADDRINUSE)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	eventually(t, 10*time.Second, "the killed client's socket released", func() bool { return d.Clients() == 2 })
	// taken is the second client now; the killed one's port is free.
	if err := taken.Bind(bind); err != nil {
		t.Fatalf("rebinding the killed client's port: %v", err)
	}
	buf := make([]byte, 200)
	for range 5 {
		if n, from := recvTimeout(t, sink, buf, 5*time.Second); n != 100 || from != bind {
			t.Fatalf("message of the killed client: %d from %v", n, from)
		}
	}
}

// FuzzDaemonRecord sends arbitrary datagrams to a daemon: it may answer
// or close the connection, never crash, and it serves the next client.
func FuzzDaemonRecord(f *testing.F) {
	poll := rdsdproto.New(nil, rdsdproto.OpPoll, 1, 0)
	send := rdsdproto.New(nil, rdsdproto.OpSend, 2, 3)
	send.SetN(3)
	send.SetAddrPort(netip.MustParseAddrPort("127.0.0.1:9"))
	cm := rdsdproto.AppendCmsg(nil, 0xffffffff, []byte{1, 0, 0, 0})
	sendCm := rdsdproto.New(nil, rdsdproto.OpSend, 3, len(cm))
	copy(sendCm.Body(), cm)
	sendCm.SetC(uint64(len(cm)))
	for _, r := range [][]byte{poll, send, sendCm, rdsdproto.New(nil, rdsdproto.OpInfo, 4, 0), {0}} {
		f.Add(r)
	}
	path := filepath.Join(f.TempDir(), "rdsd.sock")
	startDaemon(f, Config{}, path)
	f.Fuzz(func(t *testing.T, b []byte) {
		uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		if _, err := uc.Write(b); err != nil {
			return // too long for one datagram
		}
		// A valid poll after it: answered unless the daemon closed us.
		uc.Write(rdsdproto.New(nil, rdsdproto.OpPoll, 0xfffffff0, 0))
		uc.CloseWrite()
		uc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, rdsdproto.MaxRecord)
		for {
			n, err := uc.Read(buf)
			if err != nil || n == 0 {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatal("the daemon neither answered nor closed")
				}
				break
			}
			if _, err := rdsdproto.Parse(buf[:n]); err != nil {
				t.Fatalf("the daemon sent a malformed record: %v", err)
			}
		}
		st := NewStack(Config{Daemon: path})
		defer st.Close()
		s := st.Socket()
		defer s.Close()
		if ev := s.Poll(); ev&PollOut == 0 {
			t.Fatalf("the daemon does not serve after %x: poll %v", b, ev)
		}
	})
}

// RDMA zerocopy through the daemon: memory from SharedMem is what the
// daemon's transport reads and writes; other memory fails with
// ErrNotShared (EFAULT), on GetMR and on an RDMAArgs' local buffers.
func TestDaemonRDMASharedMem(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{Transports: []Transport{DAT(DATConfig{Registry: registryOn(mem.New()), IA: "mem"})}})
	as := testAddrs(2)
	cli := mustBind(t, st, ap(as[0], 0))
	srv := mustBind(t, st, ap(as[1], 0))

	_, err := cli.GetMR(make([]byte, 64), RDMAReadWrite)
	if !errors.Is(err, ErrNotShared) || !errors.Is(err, syscall.EFAULT) {
		t.Fatalf("GetMR of private memory: %v", err)
	}
	_, err = cli.GetMR(nil, 0)
	wantErrno(t, err, syscall.EINVAL)

	cmem, err := cli.SharedMem(4096)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := cli.GetMR(cmem[:64], RDMAReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.SendMsg(&Msg{Data: []byte("req"), Addr: srv.BoundAddr(), Control: []ControlMessage{RDMADest(ck)}}, 0); err != nil {
		t.Fatal(err)
	}
	m := Msg{Data: make([]byte, 16)}
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := srv.RecvMsg(&m, 0); err != nil {
		t.Fatal(err)
	}
	var got Cookie
	for _, c := range m.Control {
		if d, ok := c.(RDMADest); ok {
			got = Cookie(d)
		}
	}
	if got != ck {
		t.Fatalf("cookie %v, sent %v (control %v)", got, ck, m.Control)
	}
	private := make([]byte, 64)
	_, err = srv.SendMsg(&Msg{Data: []byte("ack"), Addr: cli.BoundAddr(), Control: []ControlMessage{
		RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{private}, Flags: RDMAReadWrite}}}, 0)
	if !errors.Is(err, ErrNotShared) {
		t.Fatalf("RDMAArgs with private memory: %v", err)
	}
	smem, err := srv.SharedMem(64)
	if err != nil {
		t.Fatal(err)
	}
	for i := range smem {
		smem[i] = byte(i + 1)
	}
	if _, err := srv.SendMsg(&Msg{Data: []byte("ack"), Addr: cli.BoundAddr(), Control: []ControlMessage{
		RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{smem}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 7}}}, 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := recvTimeout(t, cli, make([]byte, 16), 5*time.Second); n != 3 {
		t.Fatalf("reply of %d bytes", n)
	}
	for i, b := range cmem[:64] {
		if b != byte(i+1) {
			t.Fatalf("client memory byte %d = %d after the RDMA WRITE", i, b)
		}
	}
	m = Msg{Data: make([]byte, 16)}
	srv.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := srv.RecvMsg(&m, 0); err != nil || len(m.Control) != 1 || m.Control[0] != (RDMANotify{UserToken: 7, Status: RDMASuccess}) {
		t.Fatalf("notification: %v %v", m.Control, err)
	}
	if err := cli.FreeMR(ck, 0); err != nil {
		t.Fatal(err)
	}
	if cli.MRs() != 0 {
		t.Fatalf("MRs after FreeMR: %d", cli.MRs())
	}
}

// A daemon socket's records travel in shared memory rings once the
// first request handed them over; the socket carries descriptors only.
func TestDaemonUsesRings(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	a := mustBind(t, st, ap(testAddrs(1)[0], 0))
	k := a.b.(*daemonSocket)
	if !k.c.Rings() {
		t.Fatal("the socket's records do not travel in rings")
	}
	if _, err := a.SendTo([]byte("x"), a.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if n, _ := recvTimeout(t, a, make([]byte, 4), 5*time.Second); n != 1 {
		t.Fatalf("%d bytes", n)
	}
	if _, err := a.SharedMem(4096); err != nil { // a descriptor, on the socket beside the rings
		t.Fatal(err)
	}
	if a.Poll()&PollOut == 0 {
		t.Fatal("no POLLOUT")
	}
}

// FuzzDaemonRingRecord writes arbitrary records into a client's ring,
// and an arbitrary count of pushed messages read into its ack word,
// after the rings were handed over as a client does: the daemon may
// answer or close that connection, never crash, and it serves the next
// client.
func FuzzDaemonRingRecord(f *testing.F) {
	f.Add(uint64(0), []byte(rdsdproto.New(nil, rdsdproto.OpPoll, 1, 0)))
	send := rdsdproto.New(nil, rdsdproto.OpSend, 0, 3)
	send.SetB(sendPosted)
	send.SetN(3)
	send.SetAddrPort(netip.MustParseAddrPort("127.0.0.1:9"))
	f.Add(uint64(0), []byte(send))
	more := rdsdproto.New(nil, rdsdproto.OpSend, 2, 8)
	more.SetFlags(rdsdproto.FlagMore)
	f.Add(uint64(0), []byte(more))
	f.Add(uint64(0), []byte{0, 1})
	recv := rdsdproto.New(nil, rdsdproto.OpRecv, 3, 0)
	recv.SetB(recvAhead)
	recv.SetN(64)
	f.Add(uint64(0), []byte(recv))
	credit := rdsdproto.New(nil, rdsdproto.OpRecv, 0, 0)
	credit.SetB(recvCredit)
	credit.SetC(1)
	f.Add(uint64(0), []byte(credit))
	push := rdsdproto.New(nil, rdsdproto.OpRecv, 3, 0)
	push.SetB(recvAhead | recvPush)
	push.SetN(64)
	f.Add(uint64(0), []byte(push))
	f.Add(uint64(1)<<40, []byte(push)) // an ack for messages never handed
	f.Add(uint64(7), []byte(credit))
	path := filepath.Join(f.TempDir(), "rdsd.sock")
	startDaemon(f, Config{}, path)
	f.Fuzz(func(t *testing.T, ack uint64, b []byte) {
		uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		c2d, err := shmring.Create(rdsdproto.RingCapacity)
		if err != nil {
			t.Fatal(err)
		}
		defer c2d.Close()
		d2c, err := shmring.Create(rdsdproto.RingCapacity)
		if err != nil {
			t.Fatal(err)
		}
		defer d2c.Close()
		h := rdsdproto.New(nil, rdsdproto.OpRings, 1, 0)
		if err := shmring.SendFiles(uc, h, append(c2d.Files(), d2c.Files()...)); err != nil {
			t.Fatal(err)
		}
		uc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := uc.Read(make([]byte, rdsdproto.MaxRecord)); err != nil || n != rdsdproto.HeaderLen {
			t.Fatalf("rings reply: %d %v", n, err)
		}
		d2c.PublishAck(ack) // what the client says it read, in shared memory
		if len(b) > c2d.MaxRecord() {
			b = b[:c2d.MaxRecord()]
		}
		if !c2d.TryWrite(b) {
			t.Fatal("the ring has no room for one record")
		}
		// A valid poll after it: answered unless the daemon closed us.
		c2d.TryWrite(rdsdproto.New(nil, rdsdproto.OpPoll, 0xfffffff0, 0))
		uc.CloseWrite()
		buf := make([]byte, rdsdproto.MaxRecord)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			n, err := d2c.Read(ctx, buf)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatal("the daemon neither answered nor closed")
				}
				break
			}
			if _, err := rdsdproto.Parse(buf[:n]); err != nil {
				t.Fatalf("the daemon sent a malformed record: %v", err)
			}
		}
		st := NewStack(Config{Daemon: path})
		defer st.Close()
		s := st.Socket()
		defer s.Close()
		if ev := s.Poll(); ev&PollOut == 0 {
			t.Fatalf("the daemon does not serve after %x: poll %v", b, ev)
		}
	})
}
