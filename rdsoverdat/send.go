package rdsoverdat

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The send path (rds_sendmsg): check flags, destination and size; find or
// create the connection (the first send brings it up); pick the socket's
// path; test the destination port in the peer's congestion map; reserve
// SO_SNDBUF room; copy the payload into a message, give it the path's
// next sequence number and queue it; wake the transport. The message stays
// on the path until the peer acknowledges it or it is cancelled.

// sendmsg is Socket.SendMsg; the caller checked flags.
func (s *sock) sendmsg(p []byte, dst netip.AddrPort, cm []ControlMessage, flags MsgFlags) (int, error) {
	ip := dst.Addr().Unmap()
	dport := wire.Port(dst.Port())

	s.mu.Lock()
	node, conn, connIP := s.node, s.txConn, s.txIP
	if len(cm) == 0 && conn != nil && connIP == ip && node != nil && len(p) <= wire.MaxMsgSize &&
		len(p) <= s.sndbuf && conn.node == node && !conn.fcong.test(dport) &&
		s.sndBytes < s.sndbuf && !s.closed.Load() {
		// The common send: to the address of the last one, which
		// passed the checks below then (txIP), over its connection,
		// to an uncongested port, with room. admit would come to the
		// same, after a second hold of the lock.
		half, sport, spare := s.admitLocked(len(p))
		s.mu.Unlock()
		return s.queue(conn, p, sport, dport, half, nil, spare)
	}
	tr, sndbuf, timeo := s.trans, s.sndbuf, s.sndTimeo
	s.mu.Unlock()
	if s.closed.Load() {
		return 0, errClosed
	}
	if !dst.IsValid() {
		return 0, eNOTCONN // no msg_name and no connect(2): rds_sendmsg's ENOTCONN
	}
	if !ip.Is4() {
		return 0, eINVAL
	}
	// Unspecified, multicast (224/4) or broadcast, tested on the four
	// bytes inline: netip's IsMulticast is a call.
	if a := ip.As4(); a == [4]byte{} || a[0]&0xf0 == 0xe0 || a == [4]byte{255, 255, 255, 255} {
		return 0, eINVAL
	}
	nonblock := flags&MsgDontWait != 0
	if node == nil {
		return 0, eNOTCONN
	}
	if len(p) > wire.MaxMsgSize {
		return 0, ErrMsgTooBig
	}
	if len(p) > sndbuf {
		return 0, eMSGSIZE
	}
	var rcm rdmaCmsgs
	if len(cm) > 0 {
		var err error
		if rcm, err = parseRDMACmsgs(cm); err != nil {
			return 0, err
		}
	}
	if conn == nil || connIP != ip || conn.node != node {
		if conn = node.connFor(ip, tr.Type()); conn == nil {
			return 0, eNOTCONN
		}
		s.mu.Lock()
		s.txConn, s.txIP = conn, ip
		s.mu.Unlock()
	}
	if len(cm) == 0 {
		return s.admit(conn, p, dport, nonblock, opEnd(timeo), nil)
	}
	var ra rdmaAttach
	if err := s.rdmaPrepare(&rcm, conn, len(p), &ra); err != nil {
		return 0, err
	}
	n, err := s.admit(conn, p, dport, nonblock, opEnd(timeo), &ra)
	ra.settle(s, err)
	return n, err
}

// admit waits for the destination port to be uncongested and for
// SO_SNDBUF room (until the deadline until), then queues the message.
func (s *sock) admit(conn *connection, p []byte, dport wire.Port, nonblock bool, until time.Time, ra *rdmaAttach) (int, error) {
	node := conn.node
	// Congestion (rds_cong_wait).
	if conn.fcong.test(dport) {
		if err := s.congWait(conn, dport, nonblock, until); err != nil {
			return 0, err
		}
	}

	// SO_SNDBUF admission (rds_send_queue_rm): room if the queued bytes
	// are below the limit before adding; the last message may overshoot.
	settled := false
	for {
		s.mu.Lock()
		if s.closed.Load() {
			s.mu.Unlock()
			return 0, errClosed
		}
		if s.sndBytes < s.sndbuf {
			half, sport, spare := s.admitLocked(len(p))
			s.mu.Unlock()
			return s.queue(conn, p, sport, dport, half, ra, spare)
		}
		if nonblock && !settled {
			// Acks a transport left to later traffic may have come:
			// the kernel would have freed their room already.
			s.wantRoomLocked()
			s.mu.Unlock()
			node.settleAcks()
			settled = true
			continue
		}
		if !nonblock {
			s.roomWaiters++
		}
		s.mu.Unlock()
		node.stats.sendQueueFull.Add(1)
		if nonblock {
			return 0, eAGAIN
		}
		err := s.blockForRoom(node, until)
		s.mu.Lock()
		s.roomWaiters--
		s.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
}

// ackSettler is a nodeTransport that may leave an ack, and so the
// SO_SNDBUF room it frees, to later traffic (the tcp transport's lone
// message; xport.AckSettler): SettleAcks frees what p's peer has
// acknowledged, and while a socket of the node waits for room has p poll
// for the rest.
type ackSettler interface{ SettleAcks(p *connPath) }

// blockForRoom waits for SO_SNDBUF room, counted in node.sndBlocked, and
// first settles the acks of the node's paths: the room this sender waits
// for may be held by a message to any destination.
func (s *sock) blockForRoom(node *rdsNode, until time.Time) error {
	node.sndBlocked.Add(1)
	defer node.sndBlocked.Add(-1)
	s.releaseReader()
	node.settleAcks()
	return s.block(s.txSig, until, false)
}

// wantRoomLocked marks s as waiting for SO_SNDBUF room without blocking:
// refused with EAGAIN, or polled without POLLOUT. Until room comes
// (roomCameLocked) or s closes, it counts in node.roomWanted, so that the
// node's transports poll for the acks that free it: a retry or the
// POLLOUT that follows then finds the room. s.mu is held and s is bound.
func (s *sock) wantRoomLocked() {
	if !s.roomWant {
		s.roomWant = true
		s.node.roomWanted.Add(1)
	}
}

// admitLocked counts n bytes against SO_SNDBUF, which has room, and
// takes a spare message for them; s.mu is held. It passes the room on to
// another blocked sender if some is left and one blocks (roomWaiters:
// not a signal per send for nobody), and returns whether the message
// must ask for an ack (half the buffer taken), the bound port and the
// spare.
func (s *sock) admitLocked(n int) (half bool, sport wire.Port, spare *message) {
	s.roomCameLocked()
	s.sndBytes += n
	if s.roomWaiters > 0 && s.sndBytes < s.sndbuf {
		signal(s.txSig)
	}
	return s.sndBytes >= s.sndbuf/2, wire.Port(s.bound.Port()), s.takeSpareLocked()
}

// roomCameLocked ends a wait of wantRoomLocked once s has room; s.mu is
// held.
func (s *sock) roomCameLocked() {
	if s.roomWant && s.sndBytes < s.sndbuf {
		s.roomWant = false
		s.node.roomWanted.Add(-1)
	}
}

// congWait handles a congested destination port: ENOBUFS without
// blocking (arming the monitor mask for that port first, as the kernel
// does), otherwise wait for the peer's map to clear the bit.
func (s *sock) congWait(conn *connection, dport wire.Port, nonblock bool, until time.Time) error {
	node := conn.node
	if nonblock {
		s.mu.Lock()
		if s.congMonitor {
			s.congMask |= wire.CongMonitorMask(dport)
		}
		s.mu.Unlock()
		if conn.fcong.test(dport) {
			node.stats.congSendError.Add(1)
			return eNOBUFS
		}
		return nil
	}
	node.stats.congSendBlocked.Add(1)
	s.releaseReader()
	for conn.fcong.test(dport) {
		if err := s.block(s.txSig, until, false); err != nil {
			return err
		}
	}
	return nil
}

// queue builds the message, in spare if it has room (sock.spares), and
// puts it on the socket's path; sport is the bound port, read in the
// hold of the socket's lock that admitted it.
func (s *sock) queue(conn *connection, p []byte, sport, dport wire.Port, ackReq bool, ra *rdmaAttach, spare *message) (int, error) {
	m := spare
	if !m.ready(len(p)) {
		m = replaceMessage(spare, len(p))
	}
	copy(m.buf, p)
	m.sock, m.dport = s, dport
	if ackReq {
		m.flags |= msgAckRequired
	}
	m.Header().EncodeData(uint32(len(p)), sport, dport)
	if ra != nil {
		ra.attach(m)
	}
	path := s.lane(conn)
	if !path.enqueue(m) {
		m.release()
		s.sendDone(len(p), nil)
		return 0, errClosed
	}
	node := conn.node
	node.stats.sendQueued.Add(1)
	node.stats.sendBytes.Add(uint64(len(p)))
	return len(p), nil
}

// sendDone returns n bytes of SO_SNDBUF room (ack or cancel). freed is
// the messages whose room it is that were just freed (unref), linked by
// next, or nil: s keeps those it has room for among its spares if they
// may be kept (sparable), and sendDone recycles the others once s.mu is
// released. The room goes to a blocked sender only if one is counted
// (roomWaiters) in this hold of s.mu: a sender counts itself in the
// hold that found no room, so one counted later saw this room itself.
// Congestion waiters on txSig have their own signal (congUpdate).
func (s *sock) sendDone(n int, freed *message) {
	var rest *message
	s.mu.Lock()
	s.sndBytes -= n
	s.roomCameLocked()
	for freed != nil {
		m := freed
		freed = m.next
		if !m.sparable(spareBuf) || s.closed.Load() || !s.spares.push(m, maxSpares) {
			m.next, rest = rest, m
		}
	}
	waiter := s.roomWaiters > 0
	s.mu.Unlock()
	if waiter {
		signal(s.txSig)
	}
	s.signalPoll()
	recycleList(rest)
}

// maxSpares bounds a socket's spare messages: a request-response
// sender's acks free them a few at a time (the tcp transport counts
// them once per 8 of its own writes), and each spare keeps at most
// spareBuf bytes.
const maxSpares = 16

// takeSpareLocked returns a spare message of s, or nil; s.mu is held.
func (s *sock) takeSpareLocked() *message { return s.spares.pop() }

// lane returns the socket's path on conn, fixed by its first message.
// A single-path connection's is its only path, found inline: the rest
// takes a lock and a deferred unlock, which no call inlines.
func (s *sock) lane(conn *connection) *connPath {
	if conn.maxPaths == 1 {
		return conn.paths[0]
	}
	return s.laneMulti(conn)
}

// laneMulti is lane for a connection of more than one path.
func (s *sock) laneMulti(conn *connection) *connPath {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.lanes[conn]
	if p == nil {
		p = conn.pathFor(s)
		if s.lanes == nil {
			s.lanes = make(map[*connection]*connPath)
		}
		s.lanes[conn] = p
	}
	return p
}
