package shmring

import "errors"

// Errors of the package. Calls wrap them with detail; test with errors.Is.
var (
	// ErrClosed: this side closed the ring or region (Close).
	ErrClosed = errors.New("shmring: closed")
	// ErrPeerClosed: the peer closed its side, or the caller declared it
	// gone (Shutdown). A consumer still receives the records committed
	// before; then it gets ErrPeerClosed.
	ErrPeerClosed = errors.New("shmring: peer closed")
	// ErrCorrupt: the shared memory holds what no well-behaved peer
	// writes (an index or length out of bounds, an unknown record kind).
	// The ring is unusable from then on.
	ErrCorrupt = errors.New("shmring: shared memory corrupt")
	// ErrTooLarge: a record longer than the ring's MaxRecord.
	ErrTooLarge = errors.New("shmring: record too large for the ring")
	// ErrShortBuffer: the next record does not fit the caller's buffer;
	// it stays in the ring.
	ErrShortBuffer = errors.New("shmring: buffer too short for the record")
	// ErrBadFiles: Attach or RegionTable.Add got files that are not what
	// Create or NewRegion hand out (a sealed memfd, eventfds).
	ErrBadFiles = errors.New("shmring: not a ring or region file")
	// ErrNotShared: memory that lies in no shared region, or a region
	// id, offset or length the daemon does not know.
	ErrNotShared = errors.New("shmring: memory not in a shared region")
	// ErrNoSpace: a region has no free extent as large as asked, or a
	// region table is at its limit.
	ErrNoSpace = errors.New("shmring: no space")
	// ErrInvalid: a bad argument (a size out of range, a zero id).
	ErrInvalid = errors.New("shmring: invalid argument")
)
