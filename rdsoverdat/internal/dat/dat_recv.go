package dat

import (
	"errors"
	"net/netip"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The dat receive side (rds_ib_process_recv, ib_recv.c). Each SRQ buffer
// holds one Send: a 48-byte header and one fragment of payload. The
// header's checksum is verified; its h_ack frees acknowledged messages
// and its h_credit adds send credits, on every fragment. An ack-only frame
// (ports and length 0) ends there. Otherwise the fragment starts or
// continues the one message in reassembly on that connection; a fragment
// that does not fit (other sequence, length or ports, wrong size) is a
// protocol error that resets this connection only. A complete message
// goes to the core, then its sequence number becomes the connection's
// ack (even if lower than before: the peer restarted), requested promptly if the sender asked with ACK_REQUIRED. The
// buffer goes back to the SRQ with the others of its batch of events (or
// rests in the node's free list while enough others are posted,
// dat_rxpost.go) and is then counted as a posted credit of the
// connection it came from.

var (
	errDatShort    = errors.New("rds dat: receive shorter than an RDS header")
	errDatLong     = errors.New("rds dat: fragment longer than a receive buffer")
	errDatChecksum = errors.New("rds dat: header checksum mismatch")
	errDatFrag     = errors.New("rds dat: fragment does not continue the message in reassembly")
	errDatTooBig   = errors.New("rds dat: message longer than RDS_MAX_MSG_SIZE")
)

// parseDatFrag splits one received Send into its header and fragment.
func parseDatFrag(b []byte) (wire.Header, []byte, error) {
	if len(b) < wire.HeaderLen {
		return nil, nil, errDatShort
	}
	if len(b) > datSlot {
		return nil, nil, errDatLong
	}
	h := wire.Header(b[:wire.HeaderLen])
	if !h.ChecksumOK() {
		return nil, nil, errDatChecksum
	}
	return h, b[wire.HeaderLen:], nil
}

// isDatAck reports whether h is an ack-only frame (rds_ib_process_recv:
// no payload, ports 0; a congestion map has ports 0 but a length).
func isDatAck(h wire.Header, frag []byte) bool {
	return len(frag) == 0 && h.Len() == 0 && h.Sport() == 0 && h.Dport() == 0
}

// datReasm is the reassembly state of one connection: the first
// fragment's header (kept while more fragments are due) and how much of
// the payload has arrived.
type datReasm struct {
	hdr    [wire.HeaderLen]byte
	active bool
	off    int
	total  int
	frag   int // the message's fragment size: its first fragment's
}

// next accepts a fragment of n payload bytes with header h. first: it
// starts a message (the caller makes one for h); done: it completes one.
// Every fragment but the last carries exactly as many bytes as the first,
// 4096 (RDS_FRAG_SIZE) or, between godapl nodes, up to datFragMax
// (dat_frag.go); the receiver need not know which the sender chose.
func (r *datReasm) next(h wire.Header, n int) (first, done bool, err error) {
	if !r.active {
		l := int(h.Len())
		if l > wire.MaxMsgSize {
			return false, false, errDatTooBig
		}
		if !datFirstFragOK(n, l) {
			return false, false, errDatFrag
		}
		r.total, r.off, r.frag = l, n, n
		r.active = n < l
		if r.active {
			// What the next fragments must match; a message of one
			// fragment, nearly every small one, needs no copy.
			copy(r.hdr[:], h)
		}
		return true, !r.active, nil
	}
	rh := wire.Header(r.hdr[:])
	if h.Sequence() != rh.Sequence() || h.Len() != rh.Len() || h.Sport() != rh.Sport() ||
		h.Dport() != rh.Dport() || n != min(r.frag, r.total-r.off) {
		return false, false, errDatFrag
	}
	r.off += n
	r.active = r.off < r.total
	return false, !r.active, nil
}

// onRecv handles a receive completion of SRQ buffer c.Cookie.
func (dn *datNode) onRecv(c *dat.DTOCompletion) {
	i := int(c.Cookie)
	if c.Cookie >= dat.DTOCookie(dn.nbufs.Load()) {
		return
	}
	e := dn.epOf(c.EP)
	if e != nil && e.dead.Load() {
		e = nil
	}
	if e != nil && c.Status == dat.DTOSuccess {
		e.recv(dn.rxBuf(i)[:min(int(c.Length), datSlot)])
	}
	dn.handled(i, e)
}

// recv processes one received Send on e (event goroutine).
func (e *datEP) recv(b []byte) {
	p := e.dp.p // e.dn.node is read only where a count is made, off the common path
	e.syncPeerGen()
	h, frag, err := parseDatFrag(b)
	if err != nil {
		if err == errDatChecksum {
			e.dn.node.Count(xport.CountBadChecksum)
		} else {
			e.dn.node.Count(xport.CountBadHeader)
		}
		e.protocolError()
		return
	}
	// Any change, not only a larger number: when the peer learns that we
	// restarted, its acks start over in the new sequence space.
	if a := h.Ack(); a != e.lastAck {
		e.lastAck = a
		p.DropAcked(uint64(a))
	}
	if c := h.Credit(); c > 0 {
		e.credits.addSend(uint32(c))
		e.wakeForCredits()
	}
	if isDatAck(h, frag) {
		e.dn.node.Count(xport.CountAckReceived)
		return
	}
	if wire.IsRDMACheckFrame(h) { // between or inside the fragments of a message
		if !e.onChecks(h, frag) {
			e.dn.node.Count(xport.CountBadHeader)
			e.protocolError()
		}
		return
	}
	first, done, err := e.rx.next(h, len(frag))
	if err != nil {
		if err != errDatTooBig {
			e.dn.node.Count(xport.CountBadHeader)
		}
		e.protocolError()
		return
	}
	if first && done && e.dn.direct.s != nil && e.recvDirect(h, frag) {
		return
	}
	if first {
		if e.rxm, err = p.NewRxMessage(h); err != nil {
			e.protocolError()
			return
		}
	}
	m := e.rxm
	copy(m.Payload()[e.rx.off-len(frag):], frag)
	if !done {
		return
	}
	e.rxm = nil
	if !e.rdmaArrived(h) {
		m.Release()
		e.dn.node.Count(xport.CountBadHeader)
		e.protocolError()
		return
	}
	seq, cong := h.Sequence(), h.IsCongMap()
	ackReq := !cong && h.Flags()&wire.FlagAckRequired != 0
	if !cong {
		e.dn.noteDelivery(p, h)
	}
	p.Receive(m)
	if cong {
		return
	}
	// The last sequence received, not the largest (rds_ib_set_ack): one
	// connection delivers in order, and after the peer restarts its
	// sequence numbers start over at 1, below what its previous
	// incarnation sent.
	e.dp.noteReceived(seq)
	e.acking.Store(true) // after ackNext: hAck reads them the other way round
	if ackReq {
		e.ackRequested.Store(true)
		e.dn.wake(e)
	}
}

// protocolError resets e's connection after malformed input: nothing more
// it received is processed, and the path reconnects and retransmits.
func (e *datEP) protocolError() {
	e.dead.Store(true)
	if e.rxm != nil {
		e.rxm.Release()
		e.rxm = nil
	}
	e.rx.active = false
	e.ep.Disconnect(dat.CloseAbrupt)
}

// recvDirect takes a message of one fragment, frag, with header h into
// the buffer of the RecvMsg that holds the event role (dat_role.go) when
// it is plain data for that RecvMsg's socket, fits, and overtakes
// nothing in the socket's queue: the message, its queueing, the wake-up
// and the holder's interrupt are saved, as the tcp transport's holder
// saves them. It then does what recv does after delivering, and reports
// true; false leaves the message to recv (the buffer stays on offer).
// A peek never offers a buffer (Run), and a buffer too small leaves
// MSG_TRUNC to the queue's path.
func (e *datEP) recvDirect(h wire.Header, frag []byte) bool {
	dn := e.dn
	d := &dn.direct
	p := e.dp.p
	l := len(frag)
	if l > len(d.buf) {
		return false
	}
	if is, plain := p.ReaderFor(h, d.s); !is || !plain || !d.s.QueueEmpty() {
		return false
	}
	seq, flags := h.Sequence(), h.Flags()
	// What noteDelivery counts; a holder never lends.
	dn.batchMsgs++
	dn.lendTo = nil
	if p.AcceptDirect(seq, flags&wire.FlagRetransmitted != 0, l) {
		d.n = copy(d.buf, frag)
		d.from = netip.AddrPortFrom(e.dp.raddr, uint16(h.Sport()))
		d.filled = true
		d.s, d.buf = nil, nil // what else comes for the socket is queued behind it
	}
	// A duplicate is dropped, and acknowledged as recv does after
	// Receive dropped it.
	e.dp.noteReceived(seq)
	e.acking.Store(true)
	if flags&wire.FlagAckRequired != 0 {
		e.ackRequested.Store(true)
		dn.wake(e)
	}
	return true
}
