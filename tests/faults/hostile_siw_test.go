package faults

// A hostile peer against a soft-iWARP listener (through the DAT API):
// random, truncated, oversized and well-formed-but-wrong MPA frames and
// DDP/RDMAP segments, each on its own connection, while a good peer keeps
// exchanging messages with the same IA. The node must end each bad
// connection, never answer an RDMA Read or place an RDMA Write outside a
// registered range (the memory around and inside the exposed region is
// checked byte for byte), keep serving the good peer, and not grow.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// attack is one hostile connection: what it sends, and whether it first
// completes a well-formed MPA exchange (so that the bytes reach the
// DDP/RDMAP layer).
type attack struct {
	name    string
	connect bool // send a good MPA Request and read the Reply first
	bytes   func(r *rand.Rand, tgt target) []byte
	// hangUp closes the attacker's sending side after the bytes: a
	// truncated FPDU is only an error once the stream ends (until then
	// the rest may be on its way, and the node rightly waits).
	hangUp bool
}

// target is what an attacker aims at: the STag and address of the
// exposed region (an attacker could have learnt them from an earlier
// session) and a guess.
type target struct {
	stag uint32
	va   uint64
	size int
}

func hostileAttacks() []attack {
	random := func(r *rand.Rand, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	return []attack{
		// Before MPA.
		{"random-bytes", false, func(r *rand.Rand, _ target) []byte { return random(r, 1+r.IntN(4096)) }, false},
		{"truncated-request", false, func(r *rand.Rand, _ target) []byte { return goodRequest()[:1+r.IntN(mpaHdrLen-1)] }, false},
		{"bad-key", false, func(r *rand.Rand, _ target) []byte {
			b := goodRequest()
			b[r.IntN(16)] ^= 0x20
			return b
		}, false},
		{"oversized-private-data", false, func(r *rand.Rand, _ target) []byte {
			return append(mpaRequest(0x10, 2, nil)[:18], 0xFF, 0xFF, 0, 1, 0, 1)
		}, false},
		{"bad-revision", false, func(r *rand.Rand, _ target) []byte { return mpaRequest(0x10, 9, []byte{0, 1, 0, 1}) }, false},
		{"markers-requested", false, func(r *rand.Rand, _ target) []byte { return mpaRequest(0x80|0x10, 2, []byte{0, 1, 0, 1}) }, false},
		// After MPA: DDP/RDMAP.
		{"random-fpdus", true, func(r *rand.Rand, _ target) []byte { return random(r, 64+r.IntN(8192)) }, false},
		{"fpdu-length-beyond-mulpdu", true, func(r *rand.Rand, _ target) []byte {
			return append([]byte{0xFF, 0xF0}, random(r, 256)...)
		}, false},
		{"truncated-fpdu", true, func(r *rand.Rand, _ target) []byte {
			b := fpdu(untagged(opSend, 0, 1, 0, make([]byte, 100)))
			return b[:10+r.IntN(len(b)-10)]
		}, true},
		{"bad-ddp-version", true, func(r *rand.Rand, _ target) []byte {
			u := untagged(opSend, 0, 1, 0, make([]byte, 16))
			u[0] = 0x40 | 3
			return fpdu(u)
		}, false},
		{"bad-rdmap-opcode", true, func(r *rand.Rand, _ target) []byte {
			return fpdu(untagged(0xB, 0, 1, 0, make([]byte, 16)))
		}, false},
		{"bad-queue-number", true, func(r *rand.Rand, _ target) []byte {
			return fpdu(untagged(opSend, 7, 1, 0, make([]byte, 16)))
		}, false},
		{"send-msn-out-of-range", true, func(r *rand.Rand, _ target) []byte {
			return fpdu(untagged(opSend, 0, 1+uint32(r.IntN(1<<30)), 0, make([]byte, 16)))
		}, false},
		{"send-without-receive", true, func(r *rand.Rand, _ target) []byte {
			return fpdu(untagged(opSend, 0, 1, 0, make([]byte, 16)))
		}, false},
		{"write-guessed-stag", true, func(r *rand.Rand, t target) []byte {
			return fpdu(tagged(opWrite, r.Uint32(), t.va, bytes.Repeat([]byte{0xEE}, 64)))
		}, false},
		{"write-stag-below-range", true, func(r *rand.Rand, t target) []byte {
			return fpdu(tagged(opWrite, t.stag, t.va-64, bytes.Repeat([]byte{0xEE}, 64)))
		}, false},
		{"write-stag-across-end", true, func(r *rand.Rand, t target) []byte {
			return fpdu(tagged(opWrite, t.stag, t.va+uint64(t.size)-8, bytes.Repeat([]byte{0xEE}, 64)))
		}, false},
		{"write-stag-huge-to", true, func(r *rand.Rand, t target) []byte {
			return fpdu(tagged(opWrite, t.stag, ^uint64(0)-16, bytes.Repeat([]byte{0xEE}, 64)))
		}, false},
		{"read-guessed-stag", true, func(r *rand.Rand, t target) []byte {
			return fpdu(readRequest(1, 64, r.Uint32(), t.va))
		}, false},
		{"read-across-end", true, func(r *rand.Rand, t target) []byte {
			return fpdu(readRequest(1, 4096, t.stag, t.va+uint64(t.size)-64))
		}, false},
		{"read-response-unsolicited", true, func(r *rand.Rand, t target) []byte {
			return fpdu(tagged(opReadRsp, t.stag, t.va, bytes.Repeat([]byte{0xEE}, 64)))
		}, false},
		{"terminate-garbage", true, func(r *rand.Rand, _ target) []byte {
			return fpdu(untagged(opTerm, 2, 1, 0, random(r, 28)))
		}, false},
	}
}

// outcome is what an attacker saw.
type outcome struct {
	closed       bool          // the node ended the connection (EOF or reset)
	terminate    bool          // it sent a Terminate first
	readResponse bool          // it answered with an RDMA Read Response: a leak
	took         time.Duration // from the dial to the end of the run
}

// runAttack connects to addr, performs a, and reads until the node closes
// the connection or timeout passes.
func runAttack(addr string, a attack, r *rand.Rand, tgt target, timeout time.Duration) (o outcome, err error) {
	start := time.Now()
	defer func() { o.took = time.Since(start) }()
	c, err := net.DialTimeout("tcp4", addr, timeout)
	if err != nil {
		return o, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if a.connect {
		if _, err := c.Write(goodRequest()); err != nil {
			return o, err
		}
		hdr := make([]byte, mpaHdrLen)
		if _, err := io.ReadFull(c, hdr); err != nil {
			return o, fmt.Errorf("reading the MPA Reply: %w", err)
		}
		if hdr[16]&0x20 != 0 {
			return o, errors.New("MPA Request rejected")
		}
		if _, err := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint16(hdr[18:]))); err != nil {
			return o, err
		}
	}
	c.Write(a.bytes(r, tgt)) // may fail if the node already closed: fine
	if a.hangUp {
		c.(*net.TCPConn).CloseWrite()
	}
	// Read FPDUs until the end: look for a Terminate or a Read Response.
	var buf []byte
	tmp := make([]byte, 4096)
	for {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if a.connect {
			for len(buf) >= 2 {
				l := int(binary.BigEndian.Uint16(buf))
				total := (2 + l + 3) &^ 3
				total += 4
				if len(buf) < total || l < 2 {
					break
				}
				switch buf[3] & 0x0F {
				case opTerm:
					o.terminate = true
				case opReadRsp:
					o.readResponse = true
				}
				buf = buf[total:]
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return o, nil
			}
			o.closed = true
			return o, nil
		}
	}
}

// attackTimeout bounds one hostile connection, from its dial. The attacks
// that stop inside an MPA Request (truncated-request, a short
// random-bytes) are only dropped when the listener's request timer fires,
// siw.DefaultMPARequestTimeout after the node accepted the connection;
// everything else ends within milliseconds. A bound a few seconds above
// that timer is too tight: on a loaded host the node can close such a
// connection after the attacker has given up. The margin only has to
// cover scheduling delays, but those reach seconds on a loaded host.
const attackTimeout = siw.DefaultMPARequestTimeout + 20*time.Second

func TestHostileSiwPeer(t *testing.T) {
	verbstest.CheckLeaks(t)
	a, b := siwPair(t)
	const guard = 4096
	srv, cli := dattest.NewSide(t, a, 64<<10), dattest.NewSide(t, b, 64<<10)

	// The exposed region: the middle page of three, all remote rights;
	// every byte around and inside it is known.
	mem := make([]byte, 3*guard)
	for i := range mem {
		mem[i] = byte(i*7 + 3)
	}
	want := bytes.Clone(mem)
	exposed, err := lmr.Create(a, srv.PZ, mem[guard:2*guard], dat.MemPrivAll, dat.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	defer exposed.Free()
	tgt := target{stag: uint32(exposed.RMRContext()), va: uint64(exposed.Addr()), size: guard}

	// The PSP accepts every request: the good peer's on its own EP and
	// EVD, the attackers' on throw-away EPs whose events go to badEVD.
	crEVD, _ := evd.Create(a, 1024, nil, dat.EVDCR)
	badEVD, _ := evd.Create(a, 4096, nil, dat.EVDDefault)
	defer crEVD.Free()
	defer badEVD.Free()
	psp, qual, err := ep.CreatePSPAny(a, crEVD, dat.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	addr := netip.AddrPortFrom(a.Addr(), uint16(qual)).String()

	sep := srv.NewEP(t, nil)
	cep := cli.NewEP(t, nil)
	var (
		badMu  sync.Mutex
		badEPs = map[dat.Handle]*ep.EP{} // live hostile EPs
		freed  atomic.Int64
	)
	var accepted, acceptErrs atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The server frees a hostile EP as soon as its connection ends, as a
	// real one would; what it holds then is what the attack costs.
	reapDone := make(chan struct{})
	go func() {
		defer close(reapDone)
		for {
			ev, _, err := badEVD.Wait(ctx, 1)
			if err != nil {
				return
			}
			switch ev.Number {
			case dat.ConnectionEventDisconnected, dat.ConnectionEventBroken, dat.ConnectionEventAcceptCompletion:
				badMu.Lock()
				e := badEPs[ev.Conn.EP]
				delete(badEPs, ev.Conn.EP)
				badMu.Unlock()
				if e != nil && e.Free() == nil {
					freed.Add(1)
				}
			}
		}
	}()
	acceptDone := make(chan struct{})
	go func() { // the accept loop, stopped by cancel
		defer close(acceptDone)
		for {
			ev, _, err := crEVD.Wait(ctx, 1)
			if err != nil {
				return
			}
			if ev.Number != dat.ConnectionRequestEvent {
				continue
			}
			cr := ev.CR.CR.(*ep.CR)
			p, _ := cr.Query()
			target := sep
			if string(p.PrivateData) != "good" {
				target, err = ep.Create(a, srv.PZ, badEVD, badEVD, badEVD, nil)
				if err != nil {
					cr.Reject(nil)
					acceptErrs.Add(1)
					continue
				}
				badMu.Lock()
				badEPs[dat.Handle(target)] = target
				badMu.Unlock()
			}
			if cr.Accept(target, nil) != nil {
				acceptErrs.Add(1)
			}
			accepted.Add(1)
		}
	}()
	if err := cep.Connect(a.Addr(), qual, dattest.DefaultTimeout, []byte("good"), dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	dattest.Expect(t, cli.EVD, dat.ConnectionEventEstablished)
	dattest.Expect(t, srv.EVD, dat.ConnectionEventEstablished)

	// The good peer: ping-pong through the server until the attack ends.
	var roundTrips atomic.Int64
	goodErr := make(chan error, 1)
	stopGood := make(chan struct{})
	go func() { goodErr <- pingPong(srv, cli, sep, cep, stopGood, &roundTrips) }()

	var m0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	attacks := hostileAttacks()
	type result struct {
		outcome
		err error
	}
	outcomes := attackLoop(scale(3, 40), attacks, func(_ int, at attack, r *rand.Rand) result {
		o, err := runAttack(addr, at, r, tgt, attackTimeout)
		return result{o, err}
	})
	// Let the last hostile connections' events reach the reaper.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		badMu.Lock()
		n := len(badEPs)
		badMu.Unlock()
		if n == 0 {
			break
		}
	}
	close(stopGood)
	if err := <-goodErr; err != nil {
		t.Errorf("good peer: %v", err)
	}
	elapsed := time.Since(start)

	// Memory: nothing written inside or around the exposed region.
	if !bytes.Equal(mem, want) {
		for i := range mem {
			if mem[i] != want[i] {
				t.Errorf("byte %d (offset %d from the exposed region) changed: %#x -> %#x", i, i-guard, want[i], mem[i])
				break
			}
		}
	}
	var runs, closed, terminated, leaks, errs int
	for i, at := range attacks {
		var tl struct{ runs, closed, terminated, leaks, errs int }
		var slowest time.Duration
		for _, o := range outcomes[i] {
			slowest = max(slowest, o.took)
			tl.runs++
			switch {
			case o.err != nil:
				tl.errs++
				t.Logf("%s: %v", at.name, o.err)
			case o.readResponse:
				tl.leaks++
			case o.closed:
				tl.closed++
			}
			if o.terminate {
				tl.terminated++
			}
		}
		t.Logf("ATTACK %-26s runs=%d closed-by-node=%d terminate-sent=%d read-response=%d errors=%d slowest=%v",
			at.name, tl.runs, tl.closed, tl.terminated, tl.leaks, tl.errs, slowest.Round(time.Millisecond))
		runs += tl.runs
		closed += tl.closed
		terminated += tl.terminated
		leaks += tl.leaks
		errs += tl.errs
		if tl.closed+tl.errs != tl.runs {
			t.Errorf("%s: the node kept %d of %d hostile connections open", at.name, tl.runs-tl.closed-tl.errs, tl.runs)
		}
		if tl.leaks != 0 {
			t.Errorf("%s: the node answered an invalid RDMA Read", at.name)
		}
	}
	if errs != 0 {
		t.Errorf("%d attacks could not run", errs)
	}
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	c := counts{Scenario: "hostile iWARP peer vs siw listener (DAT)", Sent: uint64(runs), Received: uint64(closed),
		Duration: elapsed, Extra: fmt.Sprintf("attacks=%d terminates=%d accepted=%d hostile-eps-freed=%d good-round-trips=%d heap-before=%dKiB heap-after=%dKiB",
			runs, terminated, accepted.Load(), freed.Load(), roundTrips.Load(), m0.HeapInuse>>10, m1.HeapInuse>>10)}
	t.Log(c)
	if roundTrips.Load() == 0 {
		t.Error("the good peer made no progress during the attack")
	}
	if m1.HeapInuse > m0.HeapInuse+32<<20 {
		t.Errorf("heap grew from %d to %d bytes during the attack", m0.HeapInuse, m1.HeapInuse)
	}

	cancel()
	<-acceptDone
	<-reapDone
	dattest.Disconnect(t, srv, cli, sep, cep)
	eps := []*ep.EP{sep, cep}
	for _, e := range badEPs {
		eps = append(eps, e)
	}
	for _, e := range eps {
		e.Disconnect(dat.CloseAbrupt)
		e.Free()
	}
}

// pingPong bounces messages between cep and sep until stop, checking each
// one's content, and counts the round trips.
func pingPong(srv, cli *dattest.Side, sep, cep *ep.EP, stop <-chan struct{}, n *atomic.Int64) error {
	const size = 256
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	wait := func(e *evd.EVD, what string) error {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ev, _, err := e.Wait(c, 1)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ev.Number != dat.DTOCompletionEvent || ev.DTO.Status != dat.DTOSuccess {
			return fmt.Errorf("%s: %v %v", what, ev.Number, ev.DTO.Status)
		}
		return nil
	}
	cbuf, sbuf := cli.Buf.Bytes(), srv.Buf.Bytes()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		for j := range size {
			cbuf[j] = byte(i + j)
		}
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, size)}, 1, 0); err != nil {
			return err
		}
		if err := cep.PostRecv([]dat.LMRTriplet{cli.Buf.Triplet(size, size)}, 2, 0); err != nil {
			return err
		}
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, size)}, 3, 0); err != nil {
			return err
		}
		if err := wait(cli.EVD, "client send"); err != nil {
			return err
		}
		if err := wait(srv.EVD, "server recv"); err != nil {
			return err
		}
		if err := sep.PostSend([]dat.LMRTriplet{srv.Buf.Triplet(0, size)}, 4, 0); err != nil {
			return err
		}
		if err := wait(srv.EVD, "server send"); err != nil {
			return err
		}
		if err := wait(cli.EVD, "client recv"); err != nil {
			return err
		}
		if !bytes.Equal(cbuf[size:2*size], cbuf[:size]) || !bytes.Equal(sbuf[:size], cbuf[:size]) {
			return fmt.Errorf("round trip %d: data differs", i)
		}
		n.Add(1)
	}
}
