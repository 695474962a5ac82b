package rdsoverdat

import (
	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
)

// The data path in shared memory. A new daemon socket makes two
// shmring rings (the one it writes requests into, the one the daemon
// writes replies into) and hands their files to the daemon in its first
// request (OpRings, on the socket). From the reply on, every record
// travels in the rings: a side that is busy takes and puts records with
// no system call, and wakes its peer (an eventfd write) only when the
// peer sleeps. The socket then carries only records with descriptors
// (OpRegion) and tells each side that the other went away: a watcher
// goroutine on each side reads it and shuts the rings down at its end.
// Where rings cannot be made (no memfd), the socket carries everything.

// useRings moves the socket's records to rings, if it can, and reports
// whether it did.
func (k *daemonSocket) useRings() bool {
	c2d, err := shmring.Create(rdsdproto.RingCapacity)
	if err != nil {
		return false
	}
	d2c, err := shmring.Create(rdsdproto.RingCapacity)
	if err != nil {
		c2d.Close()
		return false
	}
	h := rdsdproto.New(nil, rdsdproto.OpRings, k.newID(), 0)
	files := append(c2d.Files(), d2c.Files()...)
	var buf []byte
	var r rdsdproto.Record
	var fds []int
	if err = shmring.SendFiles(k.c.UnixConn(), h, files); err == nil {
		r, fds, err = k.c.ReadSocket(&buf)
	}
	rdsdproto.CloseFDs(fds)
	if err != nil || len(fds) > 0 || r.Op() != rdsdproto.OpRings || r.Code() != rdsdproto.CodeOK {
		// A daemon without rings answers with an error and serves on the
		// socket; a broken connection shows at the first call.
		c2d.Close()
		d2c.Close()
		return false
	}
	k.c.UseRings(c2d, d2c)
	k.lead = make(chan struct{}, 1)
	k.lead <- struct{}{}
	k.watching, k.watched = true, make(chan struct{})
	go k.watchSocket()
	return true
}

// watchSocket waits for the end of the socket (the daemon closed it,
// exited or died) and shuts the rings down, so that a call reading them
// reads what was written and then fails; then it takes the reading
// token and ends the connection, so that every call fails at once, not
// only those that read. The daemon sends nothing on the socket once the
// rings are in use.
func (k *daemonSocket) watchSocket() {
	defer close(k.watched)
	var buf []byte
	_, fds, _ := k.c.ReadSocket(&buf)
	rdsdproto.CloseFDs(fds)
	k.c.ShutdownRings()
	<-k.lead
	k.drainRing()
	k.finish()
	k.lead <- struct{}{}
}
