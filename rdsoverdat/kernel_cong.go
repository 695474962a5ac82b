package rdsoverdat

import (
	"time"

	"golang.org/x/sys/unix"
)

// congPollSlice bounds one poll(2) of a congestion wait, so that Close,
// a new write deadline and SO_SNDTIMEO are noticed within it.
const congPollSlice = 10 * time.Millisecond

// pollWrBand is POLLWRBAND for poll(2)'s event field.
const pollWrBand = int16(PollWrBand)

// congWait is a blocking send's wait for a congested destination port to
// clear, on the kernel backend. The backend's sendmsg never blocks in
// the kernel (the socket is non-blocking, for the netpoller), so where a
// blocking sendmsg would sleep in rds_cong_wait it gets ENOBUFS. It
// waits here and returns nil when the send is to be tried again: the
// kernel raises POLLWRBAND on every congestion map update, so poll(2)
// for it wakes on the update. The netpoller cannot wait for that: the
// map's wake-up goes to a queue (rds_poll_waitq) that a poll joins only
// once the socket has been refused for congestion, after epoll
// registered it. start is when the send began, for SO_SNDTIMEO.
func (k *kernelSocket) congWait(start time.Time) error {
	for {
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
		var n int
		var perr error
		// Control holds the descriptor, so a concurrent Close waits for
		// this slice instead of letting the number be reused under it.
		if err := k.rc.Control(func(fd uintptr) {
			pfd := [1]unix.PollFd{{Fd: int32(fd), Events: pollWrBand}}
			n, perr = unix.Poll(pfd[:], ms)
		}); err != nil {
			return k.kernelErr(err)
		}
		if perr != nil && perr != unix.EINTR {
			return k.kernelErr(perr)
		}
		if n > 0 {
			return nil
		}
	}
}
