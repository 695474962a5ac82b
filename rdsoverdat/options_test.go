package rdsoverdat

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

func TestTransportOption(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(1)
	s := st.Socket()
	defer s.Close()
	var tr TransportOption
	if err := s.Option(&tr); err != nil || TransportType(tr) != TransNone {
		t.Fatalf("unbound: %v %v", TransportType(tr), err)
	}
	wantErrno(t, s.SetOption(TransportOption(TransNone)), syscall.EINVAL)
	wantErrno(t, s.SetOption(TransportOption(7)), syscall.EINVAL)
	wantErrno(t, s.SetOption(TransportOption(TransIB)), syscall.ENOPROTOOPT) // not configured
	if err := s.SetOption(TransportOption(TransLoop)); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, s.SetOption(TransportOption(TransTCP)), syscall.EOPNOTSUPP) // only once
	if err := s.Bind(ap(as[0], 0)); err != nil {
		t.Fatal(err)
	}
	if s.Option(&tr); TransportType(tr) != TransLoop {
		t.Errorf("after bind: %v", tr)
	}
	// Bind attaches the default transport; setting it afterwards fails.
	d := mustBind(t, st, ap(as[0], 0))
	if d.Option(&tr); TransportType(tr) != TransTCP {
		t.Errorf("default transport %v", tr)
	}
	wantErrno(t, d.SetOption(TransportOption(TransTCP)), syscall.EOPNOTSUPP)
}

func TestBufferAndTimeoutOptions(t *testing.T) {
	st := newTestStack(t, Config{SendBuffer: 1000, RecvBuffer: 2000})
	s := st.Socket()
	defer s.Close()
	var sb SendBuffer
	var rb RecvBuffer
	s.Option(&sb)
	s.Option(&rb)
	if sb != 1000 || rb != 2000 {
		t.Errorf("defaults %d %d", sb, rb)
	}
	for _, o := range []Option{SendBuffer(0), RecvBuffer(-1), SendTimeout(-1), RecvTimeout(-time.Second)} {
		wantErrno(t, s.SetOption(o), syscall.EINVAL)
	}
	s.SetOption(SendBuffer(1 << 20))
	s.SetOption(SendTimeout(time.Second))
	var to SendTimeout
	if s.Option(&sb); sb != 1<<20 {
		t.Errorf("sndbuf %d", sb)
	}
	if s.Option(&to); time.Duration(to) != time.Second {
		t.Errorf("sndtimeo %v", to)
	}
	var cs CancelSentTo
	wantErrno(t, s.Option(&cs), syscall.ENOPROTOOPT) // set-only
	wantErrno(t, s.SetOption(CancelSentTo(ap(testAddrs(1)[0], 5))), syscall.ENOTCONN)
	var re RecvErr
	s.SetOption(RecvErr(true))
	if s.Option(&re); !re {
		t.Error("RDS_RECVERR not kept")
	}
	s.Close()
	if err := s.SetOption(SendBuffer(5)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
}
