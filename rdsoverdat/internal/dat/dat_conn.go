package dat

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Connection management of the dat transport (rds_ib's ib_cm.c): per path
// at most one EP being set up or carrying messages (datPath.ep). Connect
// starts an active EP unless there is one or a reconnect is pending. A
// connection request from the peer is accepted unless our own request is
// outstanding and our address is the smaller one, or the request is older
// than the EP the peer gave us since (dat_race.go); an established EP
// that a new request finds is dropped first (the peer lost it). Lost
// connections are retried with randomized exponential backoff by the
// smaller address always, by the larger one while it has messages. On
// IB and RoCE the kernel's rules apply instead (dat_kernel.go).

// datPath is the dat transport's state of one connPath.
type datPath struct {
	dn    *datNode
	p     xport.Path
	raddr netip.Addr            // the connection's remote address, a message's source
	up    atomic.Pointer[datEP] // the EP carrying the path while it is up
	datTx
	// ackNext is the sequence of the last message received on the path,
	// what h_ack and the private data's ack_seq announce; ackGen is the
	// peer generation known when it was stored (the private data's
	// ack_gen). Only the event goroutine stores them (noteReceived).
	ackNext atomic.Uint64
	ackGen  atomic.Uint32

	mu      sync.Mutex
	ep      *datEP      // the EP being set up or carrying the path
	timer   *time.Timer // pending reconnect
	backoff xport.Backoff
}

type datEPState uint8

const (
	datConnecting datEPState = iota // active: request sent
	datAccepted                     // passive: accepted, ESTABLISHED not seen
	datUp                           // established, carrying the path
	datDead                         // disconnected or abandoned; waiting to be retired
)

var (
	errDatNoCredits = errors.New("rds dat: no receive buffers left to grant a connection")
	errDatLost      = errors.New("rds dat: connection lost")
)

// noteReceived records seq as the last sequence received on the path.
// The sequence is stored before its generation and ackSpace loads them
// the other way round, so a reader that sees the new generation sees the
// new sequence too; the reverse mix (a new sequence with the old
// generation) names no space the peer honours, which costs at most
// retransmissions.
func (dp *datPath) noteReceived(seq wire.Seq) {
	dp.ackNext.Store(uint64(seq))
	dp.ackGen.Store(dp.p.Conn().PeerGenNum())
}

// ackSpace returns what the private data announces: the last sequence
// received and the peer generation it counts in.
func (dp *datPath) ackSpace() (wire.Seq, uint32) {
	gen := dp.ackGen.Load()
	return wire.Seq(dp.ackNext.Load()), gen
}

// isActive reports whether our connection wins a simultaneous connect.
func (dp *datPath) isActive() bool { return dp.dn.node.Addr().Less(dp.p.Conn().RemoteAddr()) }

// connect starts an active connection if the path has none and no
// reconnect is pending; retry is the backoff timer firing.
func (dp *datPath) connect(retry bool) {
	dn := dp.dn
	dp.mu.Lock()
	defer dp.mu.Unlock()
	if retry {
		dp.timer = nil
		if !dp.retries() && !dp.p.HasWork() {
			return
		}
	}
	if dp.ep != nil || dp.timer != nil || dn.closing.Load() {
		return
	}
	e, err := dn.newEP(dp, true)
	if err == nil {
		var pd [datPrivateLen]byte
		p := dp.private(pd[:], e, dp.p.Conn().RemoteAddr(), newConnID())
		err = e.ep.Connect(dp.p.Conn().RemoteAddr(), dat.ConnQual(dn.cfg.Port), dn.cfg.ConnectTimeout, p, dat.QoSBestEffort, dat.ConnectDefault)
		if err != nil {
			e.state = datDead
			dn.retire(e)
		}
	}
	if err != nil {
		dp.scheduleLocked()
		return
	}
	dp.ep = e
}

// scheduleLocked arms the reconnect timer. dp.mu is held.
func (dp *datPath) scheduleLocked() {
	dn := dp.dn
	if dp.timer != nil || dn.closing.Load() {
		return
	}
	dn.wg.Add(1)
	dp.timer = time.AfterFunc(dp.backoff.Next(dn.cfg.ReconnectMin, dn.cfg.ReconnectMax), func() {
		defer dn.wg.Done()
		if !dn.closing.Load() {
			dn.evd.PostSE(dp) // the event goroutine calls connect(true)
		}
	})
}

// newEP creates an EP on the node's SRQ with its send slots and grant.
func (dn *datNode) newEP(dp *datPath, active bool) (*datEP, error) {
	g := dn.reserve()
	if g == 0 {
		return nil, errDatNoCredits
	}
	e := &datEP{dn: dn, dp: dp, active: active, grant: g}
	e.ackEvery = uint32(min(datSignalEvery, max(1, g/2)))
	s := dn.cfg.SendDepth
	e.signalEvery = uint64(min(datSignalEvery, max(1, s/2)))
	var err error
	if e.tx, err = lmr.Create(dn.ia, dn.pz, make([]byte, s*datSlot+wire.HeaderLen+datSlot), dat.MemPrivLocalRead, dat.VATypeVA); err != nil {
		dn.unreserve(g)
		return nil, err
	}
	e.ep, err = ep.CreateWithSRQ(dn.ia, dn.pz, dn.evd, dn.evd, dn.evd, dn.srq,
		&dat.EPAttr{MaxRequestDTOs: s + datEPExtraDTOs, MaxRequestIOV: 1})
	if err == nil {
		err = e.ep.SetConsumerContext(e)
	}
	if err != nil {
		if e.ep != nil {
			e.ep.Free()
		}
		e.tx.Free()
		dn.unreserve(g)
		return nil, err
	}
	e.ackIOV[0] = e.tx.Triplet(s*datSlot, wire.HeaderLen)
	for i := range e.txList {
		e.txList[i].IOV = e.txIOV[i : i+1]
	}
	dn.mu.Lock()
	if dn.eps == nil { // closing
		dn.mu.Unlock()
		e.ep.Free()
		e.tx.Free()
		return nil, net.ErrClosed
	}
	dn.eps[e] = struct{}{}
	want := dn.capacity + datEVDSpare + len(dn.eps)*(s+datEPExtraDTOs)
	if want > dn.evdLen && dn.evd.Resize(want) == nil {
		dn.evdLen = want
	}
	dn.mu.Unlock()
	return e, nil
}

// onRequest handles a connection request arriving at the PSP.
func (dn *datNode) onRequest(ev *dat.Event) {
	cr, ok := ev.CR.CR.(*ep.CR)
	if !ok {
		return
	}
	q, err := cr.Query()
	if err != nil {
		cr.Reject(nil)
		return
	}
	peer, err := dn.parsePeer(q.PrivateData)
	if err != nil || peer.Daddr() != dn.node.Addr() || peer.Saddr() == dn.node.Addr() {
		cr.Reject(nil)
		return
	}
	conn := dn.node.Conn(peer.Saddr(), wire.RDS_TRANS_IB)
	if conn == nil {
		cr.Reject(nil)
		return
	}
	dp := dn.dpath(conn.Path(0))
	dp.mu.Lock()
	old := dp.ep
	if v := dp.verdict(old, peer); v != reqAccept {
		// Ours wins or the request is stale (iWARP), or the kernel's
		// rule: wait for ours, or drop an established connection the
		// peer has lost and let both sides reconnect.
		wasUp := v == reqRejectDrop
		if wasUp {
			dp.dropLocked(old)
			dp.scheduleLocked()
		}
		dp.mu.Unlock()
		cr.Reject(nil)
		if wasUp {
			dp.p.Down(errDatLost)
		}
		return
	}
	var wasUp bool
	if old != nil {
		wasUp = old.state == datUp
		dp.dropLocked(old)
	}
	e, err := dn.newEP(dp, false)
	if err != nil {
		dp.ep = nil
		dp.mu.Unlock()
		cr.Reject(nil)
		if wasUp {
			dp.p.Down(errDatLost)
		}
		return
	}
	copy(e.peer[:], peer)
	e.state = datAccepted
	dp.ep = e
	id := newConnID() // under dp.mu, in the order EPs take the path (dat_race.go)
	if dp.timer != nil && dp.timer.Stop() {
		dn.wg.Done()
	}
	dp.timer = nil
	dp.mu.Unlock()
	if wasUp {
		dp.p.Down(errDatLost)
	}
	var pd [datPrivateLen]byte
	if err := cr.Accept(e.ep, dp.private(pd[:], e, peer.Saddr(), id)); err != nil {
		e.ep.Disconnect(dat.CloseAbrupt) // its failure event retires it
	}
}

// private fills b with what e's side of the path sends daddr with a
// request or an accept that takes connection number id (dat_race.go),
// and returns the part of it that goes out (privLen).
func (dp *datPath) private(b []byte, e *datEP, daddr netip.Addr, id uint32) []byte {
	dn := dp.dn
	ack, gen, credit := dp.offer(e)
	p := encodeDatPrivate(b, dn.node.Addr(), daddr, wire.Seq(ack), gen, dn.node.GenNum(), credit)
	putConnID(p, id)
	return p[:dn.privLen()]
}

// dropLocked takes e off the path: the caller reports Down if e was up.
// dp.mu is held.
func (dp *datPath) dropLocked(e *datEP) {
	if dp.ep == e {
		dp.ep = nil
	}
	dp.up.CompareAndSwap(e, nil)
	if e.state != datDead {
		e.state = datDead
		e.dead.Store(true)
		e.ep.Disconnect(dat.CloseAbrupt)
	}
}

// onConnEvent handles a connection event of one of the node's EPs.
func (dn *datNode) onConnEvent(ev *dat.Event) {
	e := datEPOf(ev.Conn.EP)
	if e == nil {
		return
	}
	dp := e.dp
	if ev.Number == dat.ConnectionEventEstablished {
		dn.onEstablished(e, ev.Conn.PrivateData)
		return
	}
	// Rejected, unreachable, timed out, disconnected or broken: e is
	// done. Retire it once its completions are off the EVD.
	dp.mu.Lock()
	wasUp := e.state == datUp
	current := dp.ep == e
	if e.state != datDead {
		dp.dropLocked(e)
	}
	if current {
		if wasUp {
			dp.backoff.Reset()
		}
		if dp.retries() || dp.p.HasWork() {
			dp.scheduleLocked()
		}
	}
	dp.mu.Unlock()
	if wasUp {
		dp.p.Down(errDatLost)
	}
	dn.retire(e)
}

// onEstablished brings the path up on e: the peer's grant becomes our
// send credits, and whatever the peer says it has received leaves the
// retransmit queue before anything is resent (rds_ib_cm_connect_complete).
func (dn *datNode) onEstablished(e *datEP, pdata []byte) {
	dp := e.dp
	dp.mu.Lock()
	if e.state != datConnecting && e.state != datAccepted || dp.ep != e {
		dp.mu.Unlock()
		return
	}
	if e.active {
		if len(pdata) > datPrivateLen {
			pdata = pdata[:datPrivateLen]
		}
		copy(e.peer[:], pdata)
	}
	peer, err := dn.parsePeer(e.peer[:])
	if err != nil || (e.active && (peer.Saddr() != dp.p.Conn().RemoteAddr() || peer.Daddr() != dn.node.Addr())) {
		dn.node.Count(xport.CountBadHeader)
		dp.dropLocked(e)
		dp.scheduleLocked()
		dp.mu.Unlock()
		return
	}
	if peer.Credit() == 0 {
		e.credits.disable() // the kernel's wire: RNR retry paces the sender
		dn.postAll()        // nor will it respect ours
	}
	e.credits.addSend(min(peer.Credit(), datMaxCredits))
	// A peer's frames can complete before the event that establishes
	// their connection: an ack or check answer they asked for then found
	// no credit, and nothing else retries it when the peer grants credits
	// only here, or none at all (flow control off): its sender would wait
	// forever for the answer.
	e.wakeForCredits()
	e.kernelPeer = dn.isKernelPeer(peer)
	e.state = datUp
	dp.backoff.Reset()
	e.frag = datFragFor(peer)
	// The previous EP's Down ran on this goroutine (the event role)
	// before e could establish, so this is e's generation: a round still
	// holding that EP gets nothing more from NextTx.
	e.gen = dp.p.Gen()
	dp.up.Store(e)
	dp.mu.Unlock()
	e.syncPeerGen() // before Up: nothing is sent in the space it may reset
	if peer.AckGen() == dn.node.GenNum() {
		// An ack_seq of another incarnation of ours (we restarted) or of
		// none the peer knows would free messages it never had.
		dp.p.DropAckedSeq(peer.AckSeq())
	}
	dp.p.Up()
	if !e.kernelPeer {
		dp.p.SendProbe()
	}
}

// syncPeerGen applies the generation e's peer announced in its private
// data (my_gen) to the connection before anything arrives on e or leaves
// on it: a restart it reveals resets the sequence spaces
// (connection.peerGenUpdate) before the new incarnation's messages meet the
// previous one's receive state. Event goroutine. The passive side copied
// the request's private data; the active side asks the EP for the
// accept's, since receive completions may come before ESTABLISHED.
func (e *datEP) syncPeerGen() {
	if e.genKnown {
		return
	}
	pd := datPrivate(e.peer[:])
	if e.active {
		if pd = e.ep.PeerPrivateData(); pd == nil {
			return // not there yet: the next completion asks again
		}
	}
	e.genKnown = true
	e.dp.p.Conn().PeerGenUpdate(pd.MyGen())
}

// retire ends e's life once every completion it may have queued has been
// taken: a software event posted now comes after them on the node's EVD,
// and its handler (retired) returns the SRQ share.
func (dn *datNode) retire(e *datEP) {
	if dn.closing.Load() || dn.evd.PostSE(e) != nil {
		return // Close retires what is left
	}
}

// retired runs on the event goroutine when e's retire event comes up.
func (dn *datNode) retired(e *datEP) {
	if dn.lastE == e {
		dn.lastEP, dn.lastE = nil, nil
	}
	e.ep.Free()
	if e.rxm != nil {
		e.rxm.Release()
		e.rxm = nil
	}
	dn.mu.Lock()
	_, live := dn.eps[e]
	delete(dn.eps, e)
	if live {
		dn.reserved -= e.grant
		dn.setTargetLocked()
	}
	dn.mu.Unlock()
	if !live {
		return
	}
	// A transmission that loaded e before it was dropped may still be
	// writing into its slots: free them under the path's guard. Any later
	// transmission uses the path's current EP, which is not e.
	dp := e.dp
	for !dp.inXmit.CompareAndSwap(false, true) {
		time.Sleep(10 * time.Microsecond)
	}
	e.tx.Free()
	e.retireRDMA()
	dp.inXmit.Store(false)
	if dp.want.Load() {
		dp.kick() // a kick that found the guard taken by us
	}
}

// epOf is datEPOf for the role's holder. Completions come in runs of
// one EP, and the DAT EP's consumer context is read under its lock, so
// the holder keeps the last EP it looked up, until retired forgets it:
// no completion of an EP comes after its retirement.
func (dn *datNode) epOf(h dat.Handle) *datEP {
	x, ok := h.(*ep.EP)
	if ok && x == dn.lastEP && x != nil {
		return dn.lastE
	}
	e := datEPOf(h)
	if e != nil {
		dn.lastEP, dn.lastE = x, e
	}
	return e
}

// datEPOf returns the transport EP behind a DAT EP handle.
func datEPOf(h dat.Handle) *datEP {
	x, ok := h.(*ep.EP)
	if !ok || x == nil {
		return nil
	}
	c, err := x.ConsumerContext()
	if err != nil {
		return nil
	}
	e, _ := c.(*datEP)
	return e
}
