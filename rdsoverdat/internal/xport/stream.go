package xport

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Shortcuts for stream transports, which read a header before its
// payload and so can choose where the payload goes.
//
// Direct reception: a transport that has read a header asks ClaimDirect
// whether a RecvMsg blocked on an empty queue offers a buffer big enough
// for the payload; if so it reads the payload there and calls Done, and
// no message is built. The payload may go instead into the delivery
// sink of the socket the message is for, where a daemon collects the
// socket's messages in the form it hands them to its client.
//
// Reader roles: a transport may lend the reading of a connection to a
// socket whose RecvMsg waited for the message just delivered. That
// socket's next RecvMsg that finds its queue empty runs the role
// (ReaderRole.Run) and reads the connection itself, delivering whatever
// comes for other sockets, until a message for itself has been read
// straight into its buffer.

// StreamReceiver is the part of a Path that the shortcuts use.
type StreamReceiver interface {
	// ClaimDirect offers the payload of a message with header h to a
	// waiting receiver's buffer. After a true return the transport reads
	// exactly len(d.Buf) bytes into d.Buf, calls d.Done once, and
	// receives nothing on this path until then.
	ClaimDirect(h wire.Header) (d Direct, ok bool)
	// ClaimSink is ClaimDirect for a RecvMsg that runs the reader role:
	// it offers only the delivery sink of the socket the message is for
	// (a daemon's batch), never a waiting receiver's buffer.
	ClaimSink(h wire.Header) (d Direct, ok bool)
	// ReaderTarget returns the socket a data message with header h is
	// for, nil for anything else (a map, a ping, a pong, no socket).
	ReaderTarget(h wire.Header) Receiver
	// ReaderFor reports whether a message with header h is data for r
	// (ReaderTarget(h) == r), and if so whether it is plain data r may
	// take as is: no extension headers, not a map, ping or pong, not a
	// duplicate.
	ReaderFor(h wire.Header, r Receiver) (is, plain bool)
	// AcceptDirect counts a message of l bytes read straight into a
	// receiver's buffer as Receive would; false for a duplicate, which
	// the receiver then discards.
	AcceptDirect(seq wire.Seq, retx bool, l int) bool
	// ReceiveWakes is Path.Receive with the socket's wake-up noted in w
	// rather than done (wakes.go); the message is queued at once.
	ReceiveWakes(m Msg, w *Wakes)
}

// Direct is a claimed direct reception.
type Direct struct {
	// Buf is the payload's destination: the waiting receiver's memory,
	// h_len bytes long.
	Buf []byte
	// Sink is the receiver that offered Buf; Path, Seq, Sport and Retx
	// are the message's, for it.
	Sink  DirectSink
	Path  Path
	Seq   wire.Seq
	Sport wire.Port
	Retx  bool
	// Wakes, if the transport sets it before Done, takes a sink's
	// wake-up of its socket (wakes.go); nil wakes at once. A waiting
	// receiver's own buffer is always finished at once.
	Wakes *Wakes
}

// Done ends the claim: ok reports that Buf holds the whole payload.
// Otherwise the message, never acknowledged, comes again on the path's
// next connection.
func (d Direct) Done(ok bool) { d.Sink.DirectDone(d, ok) }

// DirectSink is a receiver that offered a buffer for direct reception.
type DirectSink interface {
	DirectDone(d Direct, ok bool)
	Receiver
}

// Receiver is a socket's receive side as a stream transport sees it.
type Receiver interface {
	// Waiting reports whether a RecvMsg of the socket waits for a
	// message (false once the socket is closed).
	Waiting() bool
	// Closed reports whether the socket is closed.
	Closed() bool
	// QueueEmpty reports whether nothing waits in the socket's queue, so
	// that a message read into a caller's buffer overtakes nothing.
	QueueEmpty() bool
	// LendReader records r as lent to the socket's receivers and wakes
	// one that waits; false if the socket is closed.
	LendReader(r *RoleRef) bool
	// ReaderDone ends a RecvMsg's run of role r: gone forgets it was
	// lent, otherwise a receiver that waited meanwhile may take it.
	ReaderDone(r *RoleRef, gone bool)
	// Interrupted reports whether the socket interrupted the role it
	// is about to run (ReaderRole.Interrupt) since its RecvMsg last
	// looked at the socket: an interrupt that came before that RecvMsg
	// held the role ended another holder's read instead, so the
	// RecvMsg must look again rather than read.
	Interrupted() bool
}

// ReaderRole is a transport connection's reader role as a socket sees
// it.
type ReaderRole interface {
	// Run takes the role if it is idle and reads until a message for s
	// has been read into buf (RRFilled), a message for s was queued or s
	// must look at its queue again (RRAgain), limit passed (RRTimedOut),
	// or it could not be taken: another RecvMsg runs it (RRBusy) or it
	// went back to the transport (RRGone). peek: the caller peeks, so
	// nothing may be read into buf. Run calls s.ReaderDone before it
	// returns.
	Run(s Receiver, buf []byte, peek bool, limit time.Time) (int, netip.AddrPort, RRResult)
	// Interrupt ends a blocked read of the RecvMsg running the role, if
	// any, or the next read.
	Interrupt()
	// GiveBack returns the role to the transport if it is idle.
	GiveBack()
}

// RoleRef is a role as sockets hold it: one per transport connection, so
// that storing it allocates nothing.
type RoleRef struct{ R ReaderRole }

// RRResult is how a run of a reader role ended.
type RRResult uint8

const (
	RRAgain    RRResult = iota // look at the queue again
	RRFilled                   // buf holds a message for the caller
	RRQueued                   // a message for the caller was queued (the transport's; Run returns RRAgain)
	RRTimedOut                 // the caller's limit passed
	RRBusy                     // another RecvMsg runs the role
	RRGone                     // the role went back to the transport
)
