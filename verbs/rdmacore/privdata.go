//go:build rdmacore

package rdmacore

import (
	"fmt"

	"github.com/godapl/godapl/verbs"
)

// Private data goes to rdma_cm as the consumer gave it, with nothing of
// godapl's around it, so that any rdma_cm peer (the kernel's rds_rdma,
// OFA uDAPL, rping) reads it as its own. On IB and RoCE the CM message
// has a fixed field and no length: the peer receives the bytes sent,
// padded with zeros to the field's size, which is what rdma_cm reports
// and what this provider hands up. On iWARP MPA carries the length and
// the peer receives exactly the bytes sent.

// privKind is the CM message that carries private data.
type privKind uint8

const (
	privRequest privKind = iota // connect request (IB CM REQ, MPA request)
	privReply                   // accept (IB CM REP, MPA reply)
	privReject                  // reject (IB CM REJ, MPA reply with the reject bit)
)

var privKindNames = [...]string{"connect request", "accept", "reject"}

// ibPrivSize is what rdma_cm leaves to the consumer in each IB CM
// message: the REQ's 92 bytes less rdma_cm's 36-byte address header,
// the REP's 196 and the REJ's 148.
var ibPrivSize = [...]int{privRequest: 56, privReply: 196, privReject: 148}

// iwarpPrivSize: Linux counts MPA v2's 4-byte IRD/ORD header against the
// 252 bytes an MPA frame may carry, and a peer refuses more.
const iwarpPrivSize = verbs.MaxPrivateData - 4

// privLimit is the most private data a message of kind may carry on a
// device of transport tr.
func privLimit(tr verbs.Transport, kind privKind) int {
	if tr == verbs.TransportIWARP {
		return iwarpPrivSize
	}
	return ibPrivSize[kind]
}

// checkPriv refuses private data too long for a message of kind: rdma_cm
// would fail it with a bare EINVAL, or a peer would refuse it.
func (d *Device) checkPriv(kind privKind, b []byte) error {
	if n := privLimit(d.attr.Transport, kind); len(b) > n {
		return fmt.Errorf("rdmacore: %d bytes of private data with a %s (at most %d on %s): %w",
			len(b), privKindNames[kind], n, d.name, verbs.ErrInvalidArgument)
	}
	return nil
}
