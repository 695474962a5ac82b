package srq_test

// The property-based suite: a rapid state machine that drives random
// interleavings of srq_post_recv, Sends from several connected EPs,
// receive reaping, disconnects, resizes and set_lw against a model of the
// SRQ, and checks after every step what dat_srq_post_recv(3DAT) and
// dat-api.md §7 promise:
//
//   - per-connection order: a connection's receives complete in its send
//     order (messages carry their connection and sequence number);
//   - no buffer consumed twice and none invented: every completion names a
//     cookie posted and not yet completed;
//   - nothing lost: everything sent completes, on the recv EVD of its EP;
//   - segment fill: leading segments full, at most one partial, the rest
//     (and the gaps between segments) untouched; exact transferred lengths;
//   - counts: available, outstanding, max_recv_dtos and the low watermark
//     as the model says, at every step;
//   - the low-watermark event exactly once per arming, exactly when the
//     model says;
//   - a disconnect flushes nothing that was still on the SRQ and loses no
//     completed receive.
//
// Messages never exceed the smallest buffer and Sends only go out while
// the model has a buffer for them, so every step is deterministic; each
// step waits until the SRQ's available count reaches the model's, so the
// checks see a quiescent SRQ.
//
//	go test ./dat/srq -run Property                     # mem, a few seconds
//	GODAPL_SRQ_LONG=1 go test ./dat/srq -run Property   # 20x the cases, siw too
//	go test ./dat/srq -run Property -rapid.checks=2000  # or pick the count

import (
	"bytes"
	"flag"
	"os"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/dat/srq"
	"github.com/godapl/godapl/verbs/verbstest"
)

const (
	maxMsg     = 64  // the largest message; every buffer holds at least this
	region     = 256 // bytes of server memory per posted buffer
	regions    = 64  // > the largest SRQ the model makes
	maxSRQ     = 48
	maxConns   = 4
	sentinel   = 0xEE
	sendRegion = maxMsg
)

// checks returns how many cases to run: def unless -rapid.checks was
// given; GODAPL_SRQ_LONG multiplies by 20.
func checks(def int) int {
	n := def
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() != "100" {
		n, _ = strconv.Atoi(f.Value.String())
	} else if v := os.Getenv("RAPID_CHECKS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if os.Getenv("GODAPL_SRQ_LONG") != "" {
		n *= 20
	}
	return n
}

func TestPropertyMem(t *testing.T) {
	runProperty(t, "mem", checks(60))
}

func TestPropertySiw(t *testing.T) {
	n := checks(15)
	if testing.Short() && os.Getenv("GODAPL_SRQ_LONG") == "" {
		n = 4
	}
	runProperty(t, "siw-lo", n)
}

// runProperty runs n cases on the named IA.
func runProperty(t *testing.T, name string, n int) {
	reg, err := providers.New(providers.Options{})
	if err != nil {
		t.Skip(err)
	}
	if _, err := reg.Lookup(name); err != nil {
		t.Skipf("no %s: %v", name, err)
	}
	verbstest.CheckLeaks(t)
	f := flag.Lookup("rapid.checks")
	old := f.Value.String()
	f.Value.Set(strconv.Itoa(n))
	defer f.Value.Set(old)
	rapid.Check(t, func(rt *rapid.T) {
		tb := &rapidTB{TB: t, rt: rt}
		defer tb.cleanup()
		a, err := ia.OpenIn(reg, name, 256)
		if err != nil {
			rt.Fatal(err)
		}
		b, err := ia.OpenIn(reg, name, 0)
		if err != nil {
			a.Close(dat.CloseAbrupt)
			rt.Fatal(err)
		}
		tb.Cleanup(func() { b.Close(dat.CloseAbrupt) })
		tb.Cleanup(func() { a.Close(dat.CloseAbrupt) })
		m := newMachine(tb, rt, a, b)
		rt.Repeat(m.actions())
		m.finish(rt)
	})
}

// rapidTB lets the dattest helpers, written for testing.TB, fail a rapid
// case (so that rapid shrinks it) and clean up after each case rather
// than after the whole test.
type rapidTB struct {
	testing.TB
	rt   *rapid.T
	done []func()
}

func (r *rapidTB) Helper()                   {}
func (r *rapidTB) Fatal(args ...any)         { r.rt.Fatal(args...) }
func (r *rapidTB) Fatalf(f string, a ...any) { r.rt.Fatalf(f, a...) }
func (r *rapidTB) Error(args ...any)         { r.rt.Error(args...) }
func (r *rapidTB) Errorf(f string, a ...any) { r.rt.Errorf(f, a...) }
func (r *rapidTB) FailNow()                  { r.rt.FailNow() }
func (r *rapidTB) Log(args ...any)           { r.rt.Log(args...) }
func (r *rapidTB) Logf(f string, a ...any)   { r.rt.Logf(f, a...) }
func (r *rapidTB) Cleanup(f func())          { r.done = append(r.done, f) }

func (r *rapidTB) cleanup() {
	for i := len(r.done) - 1; i >= 0; i-- {
		r.done[i]()
	}
}

// buffer is the model of a posted buffer: its cookie, its region of the
// server's memory and its segments (offsets within the region, lengths;
// zero-length segments included).
type buffer struct {
	cookie dat.DTOCookie
	region int
	segs   [][2]int // offset, length
}

// message is the model of a Send: its connection, sequence number and
// length; its bytes are msgByte(conn, seq, i).
type message struct {
	conn, seq, n int
}

func msgByte(conn, seq, i int) byte { return byte(conn*71 + seq*13 + i*3 + 1) }

type conn struct {
	connected bool
	sent      int
	pending   []message // sent, not yet reaped, in send order
}

// machine is the model plus the system under test.
type machine struct {
	tb       *rapidTB
	rig      *dattest.SRQRig
	async    *evd.EVD
	ro       *lmr.LMR // local read only: posts must fail with PRIVILEGES
	otherPZ  *lmr.LMR // of another PZ: PROTECTION
	barrier  *srq.SRQ // always empty: its watermark event orders the async stream
	conns    []*conn
	posted   map[dat.DTOCookie]*buffer // posted and not yet completed
	free     []int                     // free regions
	cookie   dat.DTOCookie
	sendSlot int

	zero      bool // zero-size mode: every message is empty, buffers may be nil vectors
	max       int  // max_recv_dtos
	available int  // buffers on the SRQ
	lw        int  // low watermark as set
	armed     bool // the LW event may still fire
	lwPending int  // LW events the system owes (0 or 1) after a step
}

func newMachine(tb *rapidTB, rt *rapid.T, a, b *ia.IA) *machine {
	m := &machine{tb: tb, posted: map[dat.DTOCookie]*buffer{}}
	m.max = rapid.IntRange(1, 32).Draw(rt, "max_recv_dtos")
	m.zero = rapid.IntRange(0, 5).Draw(rt, "zero_size_mode") == 0
	nconns := rapid.IntRange(1, 3).Draw(rt, "connections")
	nevds := rapid.IntRange(1, 2).Draw(rt, "recv_evds")
	m.rig = dattest.NewSRQRig(tb, a, b, dattest.SRQRigAttr{
		SRQ: srq.Attr{MaxRecvDTOs: m.max, MaxRecvIOV: 4}, Conns: nconns, RecvEVDs: nevds,
		BufSize: regions * region, EVDLen: 128,
	})
	for range nconns {
		m.conns = append(m.conns, &conn{connected: true})
	}
	for i := regions - 1; i >= 0; i-- {
		m.free = append(m.free, i)
	}
	m.async = evd.Async(a)
	var err error
	if m.barrier, err = srq.Create(a, m.rig.Srv.PZ, srq.Attr{MaxRecvDTOs: 1}); err != nil {
		rt.Fatal(err)
	}
	if m.ro, err = lmr.Create(a, m.rig.Srv.PZ, make([]byte, 256), dat.MemPrivLocalRead, dat.VATypeVA); err != nil {
		rt.Fatal(err)
	}
	pz2, err := a.CreatePZ()
	if err != nil {
		rt.Fatal(err)
	}
	if m.otherPZ, err = lmr.Create(a, pz2, make([]byte, 256), dat.MemPrivAll, dat.VATypeVA); err != nil {
		rt.Fatal(err)
	}
	return m
}

func (m *machine) outstanding() int { return len(m.posted) }

func (m *machine) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"PostRecv":    m.postRecv,
		"PostInvalid": m.postInvalid,
		"Send":        m.send,
		"Reap":        m.reap,
		"Disconnect":  m.disconnect,
		"Connect":     m.connect,
		"Resize":      m.resize,
		"SetLW":       m.setLW,
		"":            m.check,
	}
}

// postRecv posts a buffer of 0..4 segments (some of them empty) whose
// total holds the largest message.
func (m *machine) postRecv(rt *rapid.T) {
	// A nil vector (0 segments) only fits zero-size messages, so it
	// appears in zero-size mode only; otherwise the last segment is
	// stretched until the buffer holds the largest message.
	nseg := rapid.IntRange(0, 4).Draw(rt, "segments")
	if !m.zero && nseg == 0 {
		nseg = 1
	}
	var segs [][2]int
	total := 0
	for i := range nseg {
		n := rapid.IntRange(0, 40).Draw(rt, "segment_len")
		if !m.zero && i == nseg-1 && total+n < maxMsg {
			n = maxMsg - total
		}
		segs = append(segs, [2]int{i * 64, n})
		total += n
	}
	c := m.cookie
	m.cookie++
	err := m.rig.SRQ.PostRecv(m.iov(m.peekRegion(), segs), c)
	if m.outstanding() >= m.max {
		wantCode(rt, err, dat.InsufficientResources)
		return
	}
	if err != nil {
		rt.Fatalf("srq_post_recv: %v", err)
	}
	b := &buffer{cookie: c, region: m.takeRegion(), segs: segs}
	m.posted[c] = b
	m.available++
}

// peekRegion returns the region the next post gets and paints it.
func (m *machine) peekRegion() int {
	r := m.free[len(m.free)-1]
	mem := m.rig.Srv.Buf.Bytes()[r*region : (r+1)*region]
	for i := range mem {
		mem[i] = sentinel
	}
	return r
}

func (m *machine) takeRegion() int {
	r := m.free[len(m.free)-1]
	m.free = m.free[:len(m.free)-1]
	return r
}

func (m *machine) iov(r int, segs [][2]int) []dat.LMRTriplet {
	var iov []dat.LMRTriplet
	for _, s := range segs {
		iov = append(iov, m.rig.Srv.Buf.Triplet(r*region+s[0], s[1]))
	}
	return iov
}

// postInvalid posts a buffer the man page says to refuse; the SRQ must
// stay as it was.
func (m *machine) postInvalid(rt *rapid.T) {
	kind := rapid.SampledFrom([]string{"outside_lmr", "no_local_write", "other_pz", "too_many_segments", "unknown_lmr"}).Draw(rt, "invalid")
	buf := m.rig.Srv.Buf
	var iov []dat.LMRTriplet
	var want dat.Code
	switch kind {
	case "outside_lmr":
		iov, want = []dat.LMRTriplet{buf.Triplet(regions*region-8, 16)}, dat.InvalidParameter
	case "no_local_write":
		iov, want = []dat.LMRTriplet{m.ro.Triplet(0, 64)}, dat.PrivilegesViolation
	case "other_pz":
		iov, want = []dat.LMRTriplet{m.otherPZ.Triplet(0, 64)}, dat.ProtectionViolation
	case "too_many_segments":
		for i := range 5 {
			iov = append(iov, buf.Triplet(i, 1))
		}
		want = dat.InvalidParameter
	case "unknown_lmr":
		x := buf.Triplet(0, 8)
		x.LMRContext += 0x10000
		iov, want = []dat.LMRTriplet{x}, dat.PrivilegesViolation
	}
	wantCode(rt, m.rig.SRQ.PostRecv(iov, 999999), want)
}

// send sends a message on a connected connection while the model has a
// buffer for it.
func (m *machine) send(rt *rapid.T) {
	if m.available == 0 {
		rt.Skip("no buffer: the connection would be terminated")
	}
	c := rapid.IntRange(0, len(m.conns)-1).Draw(rt, "conn")
	if !m.conns[c].connected {
		rt.Skip("not connected")
	}
	n := 0
	if !m.zero {
		n = rapid.IntRange(0, maxMsg).Draw(rt, "len")
	}
	cn := m.conns[c]
	msg := message{conn: c, seq: cn.sent, n: n}
	off := (m.sendSlot % (len(m.rig.Cli.Buf.Bytes()) / sendRegion)) * sendRegion
	m.sendSlot++
	src := m.rig.Cli.Buf.Bytes()[off : off+n]
	for i := range src {
		src[i] = msgByte(c, msg.seq, i)
	}
	cn.sent++
	m.rig.Send(m.tb, c, off, n)
	cn.pending = append(cn.pending, msg)
	m.available--
	if m.armed && m.available < m.lw {
		m.armed = false
		m.lwPending++
	}
	m.rig.WaitAvailable(m.tb, m.available)
}

// reap dequeues one event from a recv EVD and checks it against the model.
func (m *machine) reap(rt *rapid.T) {
	m.reapEVD(rt, rapid.IntRange(0, len(m.rig.RecvEVDs)-1).Draw(rt, "recv_evd"))
}

func (m *machine) reapEVD(rt *rapid.T, k int) {
	e := m.rig.RecvEVDs[k]
	expect := 0
	for i, c := range m.conns {
		if m.rig.Conns[i].RecvEVD == e {
			expect += len(c.pending)
		}
	}
	if expect == 0 {
		if ev, ok := dattest.TryEvent(m.tb, e); ok {
			rt.Fatalf("recv EVD %d: unexpected event %v %+v", k, ev.Number, ev.DTO)
		}
		return
	}
	ev, ok := dattest.WaitEventFor(m.tb, e, dattest.DefaultTimeout)
	if !ok {
		rt.Fatalf("recv EVD %d: %d completions expected, none came", k, expect)
	}
	d := ev.DTO
	if ev.Number != dat.DTOCompletionEvent || d.Op != dat.DTOReceive || d.Status != dat.DTOSuccess {
		rt.Fatalf("recv EVD %d: event %v op %v status %v", k, ev.Number, d.Op, d.Status)
	}
	ci := -1
	for i, c := range m.rig.Conns {
		if dat.Handle(c.Srv) == d.EP {
			ci = i
		}
	}
	if ci < 0 || m.rig.Conns[ci].RecvEVD != e {
		rt.Fatalf("recv EVD %d: completion for connection %d, not one of this EVD's", k, ci)
	}
	cn := m.conns[ci]
	if len(cn.pending) == 0 {
		rt.Fatalf("connection %d: completion of a message never sent (cookie %d, %d bytes)", ci, d.Cookie, d.Length)
	}
	msg := cn.pending[0]
	b := m.posted[d.Cookie]
	if b == nil {
		rt.Fatalf("connection %d: cookie %d was not posted, or was consumed before", ci, d.Cookie)
	}
	if int(d.Length) != msg.n {
		rt.Fatalf("connection %d message %d: transferred_length %d, sent %d (out of order?)", ci, msg.seq, d.Length, msg.n)
	}
	m.checkFill(rt, b, msg)
	cn.pending = cn.pending[1:]
	delete(m.posted, d.Cookie)
	m.free = append(m.free, b.region)
}

// checkFill checks that the message landed front to back in b's segments
// and nothing else of its region was written.
func (m *machine) checkFill(rt *rapid.T, b *buffer, msg message) {
	mem := m.rig.Srv.Buf.Bytes()[b.region*region : (b.region+1)*region]
	want := bytes.Repeat([]byte{sentinel}, region)
	left, pos := msg.n, 0
	for _, s := range b.segs {
		k := min(left, s[1])
		for i := range k {
			want[s[0]+i] = msgByte(msg.conn, msg.seq, pos+i)
		}
		pos += k
		left -= k
	}
	if !bytes.Equal(mem, want) {
		for i := range mem {
			if mem[i] != want[i] {
				rt.Fatalf("connection %d message %d (%d bytes) into segments %v: byte %d is %#x, want %#x",
					msg.conn, msg.seq, msg.n, b.segs, i, mem[i], want[i])
			}
		}
	}
}

// disconnect ends a connection from either side, gracefully or not.
func (m *machine) disconnect(rt *rapid.T) {
	c := rapid.IntRange(0, len(m.conns)-1).Draw(rt, "conn")
	if !m.conns[c].connected {
		rt.Skip("not connected")
	}
	side := rapid.SampledFrom([]string{"client", "server"}).Draw(rt, "side")
	flags := rapid.SampledFrom([]dat.CloseFlags{dat.CloseGraceful, dat.CloseAbrupt}).Draw(rt, "how")
	x := m.rig.Conns[c]
	e := x.Cli
	if side == "server" {
		e = x.Srv
	}
	if err := e.Disconnect(flags); err != nil {
		rt.Fatalf("ep_disconnect: %v", err)
	}
	waitDisconnected(m.tb, m.rig.Cli.EVD)
	waitDisconnected(m.tb, m.rig.Srv.EVD)
	m.conns[c].connected = false
	if st := x.Srv.State(); st != dat.EPStateDisconnected {
		rt.Fatalf("server EP state %v", st)
	}
}

func waitDisconnected(tb testing.TB, e *evd.EVD) {
	ev, ok := dattest.WaitEventFor(tb, e, dattest.DefaultTimeout)
	if !ok || ev.Number != dat.ConnectionEventDisconnected {
		tb.Fatalf("want DISCONNECTED, got %v (%v)", ev.Number, ok)
	}
}

// connect adds a connection.
func (m *machine) connect(rt *rapid.T) {
	if len(m.conns) >= maxConns {
		rt.Skip("enough connections")
	}
	m.rig.Connect(m.tb, &dat.EPAttr{})
	m.conns = append(m.conns, &conn{connected: true})
}

func (m *machine) resize(rt *rapid.T) {
	n := rapid.IntRange(1, maxSRQ).Draw(rt, "size")
	err := m.rig.SRQ.Resize(n)
	if n < m.outstanding() || n < m.lw {
		wantCode(rt, err, dat.InvalidState)
		return
	}
	if err != nil {
		rt.Fatalf("srq_resize(%d): %v", n, err)
	}
	m.max = n
}

func (m *machine) setLW(rt *rapid.T) {
	lw := rapid.IntRange(0, m.max+1).Draw(rt, "lw")
	err := m.rig.SRQ.SetLW(lw)
	if lw > m.max {
		wantCode(rt, err, dat.InvalidParameter)
		return
	}
	if err != nil {
		rt.Fatalf("srq_set_lw(%d): %v", lw, err)
	}
	m.lw, m.armed = lw, lw > 0
	if m.armed && m.available < lw {
		m.armed = false
		m.lwPending++
	}
}

// check compares the SRQ with the model and collects the low-watermark
// events the last step owes; an event the model does not expect fails
// here or, if it is late, at a later step or in finish.
func (m *machine) check(rt *rapid.T) {
	p, err := m.rig.SRQ.Query()
	if err != nil {
		rt.Fatal(err)
	}
	if p.Available != m.available || p.Outstanding != m.outstanding() || p.MaxRecvDTOs != m.max || p.LowWatermark != m.lw || p.State != dat.SRQStateOperational {
		rt.Fatalf("srq_query: available %d outstanding %d max %d lw %d state %v; model %d %d %d %d",
			p.Available, p.Outstanding, p.MaxRecvDTOs, p.LowWatermark, p.State, m.available, m.outstanding(), m.max, m.lw)
	}
	if !(p.Available <= p.Outstanding && p.Outstanding <= p.MaxRecvDTOs) {
		rt.Fatalf("available %d <= outstanding %d <= max %d violated", p.Available, p.Outstanding, p.MaxRecvDTOs)
	}
	m.collectAsync(rt)
}

// collectAsync takes the async events up to a barrier: an event of a
// second, empty SRQ whose watermark is armed now. The device reports
// async events in order, so everything the main SRQ raised before this
// point precedes the barrier, and the step's events are counted exactly:
// exactly lwPending low-watermark events, nothing else. (An expected
// event raised in the instant between a take and its report may trail
// the barrier; it is waited for.)
func (m *machine) collectAsync(rt *rapid.T) {
	if err := m.barrier.SetLW(1); err != nil {
		rt.Fatal(err)
	}
	got := 0
	for {
		ev, ok := dattest.WaitEventFor(m.tb, m.async, dattest.DefaultTimeout)
		if !ok {
			rt.Fatal("barrier event never came")
		}
		if ev.Number == dat.AsyncSRQLowWatermark && ev.Async.Handle == dat.Handle(m.barrier) {
			break
		}
		m.wantLW(rt, ev)
		got++
	}
	for got < m.lwPending {
		ev, ok := dattest.WaitEventFor(m.tb, m.async, dattest.DefaultTimeout)
		if !ok {
			break
		}
		m.wantLW(rt, ev)
		got++
	}
	if got != m.lwPending {
		rt.Fatalf("%d low watermark events, the model says %d", got, m.lwPending)
	}
	m.lwPending = 0
}

func (m *machine) wantLW(rt *rapid.T, ev dat.Event) {
	if ev.Number != dat.AsyncSRQLowWatermark || ev.Async.Handle != dat.Handle(m.rig.SRQ) || ev.Async.Reason != dat.ReasonSRQWatermark {
		rt.Fatalf("async event %v %+v, want the SRQ low watermark", ev.Number, ev.Async)
	}
}

// finish reaps everything still owed and checks that nothing is left.
func (m *machine) finish(rt *rapid.T) {
	for k := range m.rig.RecvEVDs {
		for {
			left := 0
			for i, c := range m.conns {
				if m.rig.Conns[i].RecvEVD == m.rig.RecvEVDs[k] {
					left += len(c.pending)
				}
			}
			if left == 0 {
				break
			}
			m.reapEVD(rt, k)
		}
		if ev, ok := dattest.TryEvent(m.tb, m.rig.RecvEVDs[k]); ok {
			rt.Fatalf("recv EVD %d: extra event %v %+v", k, ev.Number, ev.DTO)
		}
	}
	m.check(rt)
	if p, _ := m.rig.SRQ.Query(); p.Outstanding != p.Available || p.Available != len(m.posted) {
		rt.Fatalf("buffers lost or invented: %+v, model %d posted", p, len(m.posted))
	}
}

func wantCode(rt *rapid.T, err error, code dat.Code) {
	var de *dat.Error
	if err == nil || !asDAT(err, &de) || de.Code != code {
		rt.Fatalf("error %v, want %v", err, code)
	}
}

func asDAT(err error, de **dat.Error) bool {
	e, ok := err.(*dat.Error)
	if ok {
		*de = e
	}
	return ok
}
