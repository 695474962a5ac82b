package rdsoverdat

import (
	"time"

	"golang.org/x/sys/unix"
)

// congPollSlice bounds one poll(2) of a congestion wait: the send is
// tried again after each, since the wake-up poll(2) waits for can be
// lost (below), and Close, a new write deadline and SO_SNDTIMEO are
// noticed within it.
const congPollSlice = time.Millisecond

// pollWrBand is POLLWRBAND for poll(2)'s event field.
const pollWrBand = int16(PollWrBand)

// congWait is a blocking send's wait for a congested destination port to
// clear, on the kernel backend. The backend's sendmsg never blocks in
// the kernel (the socket is non-blocking, for the netpoller), so where a
// blocking sendmsg would sleep in rds_cong_wait it gets ENOBUFS. It
// waits here, and returns nil when the send is to be tried again: after
// a congestion map update or after congPollSlice, whichever comes first.
// The kernel raises POLLWRBAND once for each map update, but only to the
// first rds_poll that looks after it, and the netpoller's epoll looks
// too whenever the socket is woken (by acks, for one), so the update may
// have been seen there: hence the slice and the retry. The netpoller
// cannot do the wait itself: the map's wake-up goes to a queue
// (rds_poll_waitq) that only a poll(2) made after the refusal joins.
// start is when the send began, for SO_SNDTIMEO.
func (k *kernelSocket) congWait(start time.Time) error {
	if k.closed.Load() {
		return errClosed
	}
	k.mu.Lock()
	user, timeo := k.wdl, k.wtimeo
	k.mu.Unlock()
	now := time.Now()
	if !user.IsZero() && !now.Before(user) {
		return errDeadline
	}
	if timeo > 0 && now.Sub(start) >= timeo {
		return eTIMEDOUT
	}
	slice := congPollSlice
	if !user.IsZero() {
		slice = min(slice, user.Sub(now))
	}
	if timeo > 0 {
		slice = min(slice, start.Add(timeo).Sub(now))
	}
	ms := int((slice + time.Millisecond - 1) / time.Millisecond)
	var perr error
	// Control holds the descriptor, so a concurrent Close waits for
	// this slice instead of letting the number be reused under it.
	if err := k.rc.Control(func(fd uintptr) {
		pfd := [1]unix.PollFd{{Fd: int32(fd), Events: pollWrBand}}
		_, perr = unix.Poll(pfd[:], ms)
	}); err != nil {
		return k.kernelErr(err)
	}
	if perr != nil && perr != unix.EINTR {
		return k.kernelErr(perr)
	}
	return nil
}
