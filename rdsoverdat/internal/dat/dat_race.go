package dat

import "sync/atomic"

// Connect races between two godapl nodes over iWARP. When both connect
// at once, the larger address accepts the smaller's request and abandons
// its own, which may already be on the way. Reaching the smaller node
// after that node's connection came up, it would look like the request
// of a peer that lost the connection, which replaces the connection (the
// only way for a peer whose host died and came back to replace one this
// side still thinks is up) and drops an RDMA op in flight with it.
//
// So every connection a node makes or accepts gets a number, conn_id in
// its private data, from a counter that only grows: a connection the
// node made or accepted later has a larger one. A node holds at most one
// connection per path and makes a request only when it holds none, so a
// request numbered above the connection its receiver holds with the
// sender was made after the sender dropped that connection: a real loss,
// and the request replaces it. A request numbered at or below it was
// made before the sender took that connection, which the sender's later
// choice replaced: nobody waits on it, and it is rejected while the
// connection stays. Numbers are compared only within one generation of
// the sender (my_gen): a peer that restarted counts afresh, and its
// request replaces the connection as before. A peer that sends no
// conn_id (an older godapl node, or the kernel) has every request
// replace the connection, as before too.

// datConnIDs numbers the connections of every node of the process, so
// that two nodes of one generation in a process (one closed, the next
// opened on its address) never reuse a number with the same peer.
var datConnIDs atomic.Uint32

// newConnID returns a connection number, never 0 (none).
func newConnID() uint32 {
	for {
		if id := datConnIDs.Add(1); id != 0 {
			return id
		}
	}
}

// datVerdict is what a connection request does to the path's EP.
type datVerdict uint8

const (
	reqAccept     datVerdict = iota // drop the path's EP, if any, and accept
	reqReject                       // keep the path's EP and reject the request
	reqRejectDrop                   // drop the path's established EP and reject (kernel rule)
)

// staleRequest reports whether the request whose private data is req was
// made by its sender before the connection whose peer sent have: the
// same generation, and a number not above that connection's.
func staleRequest(have, req datPrivate) bool {
	gen, id, haveID := req.MyGen(), req.ConnID(), have.ConnID()
	if gen == 0 || gen != have.MyGen() || id == 0 || haveID == 0 {
		return false
	}
	return int32(id-haveID) <= 0 // serial order: the counter may wrap
}

// iwarpVerdict is the race rule over iWARP: the smaller address's own
// request wins over the peer's, and a stale request (above) leaves the
// EP that a later request or accept of the peer gave the path.
func (dp *datPath) iwarpVerdict(old *datEP, req datPrivate) datVerdict {
	switch old.state {
	case datConnecting:
		if dp.isActive() {
			return reqReject
		}
	case datAccepted, datUp:
		if staleRequest(datPrivate(old.peer[:]), req) {
			return reqReject
		}
	}
	return reqAccept
}
