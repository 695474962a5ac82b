package shmring

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// MaxFiles is the most descriptors one SendFiles message carries.
const MaxFiles = 8

// SendFiles sends msg (at least one byte, as a stream socket needs) with
// files attached as SCM_RIGHTS, in one message. The files stay the
// caller's.
func SendFiles(c *net.UnixConn, msg []byte, files []*os.File) error {
	if len(msg) == 0 || len(files) > MaxFiles {
		return fmt.Errorf("%w: send %d bytes with %d files (1 byte and at most %d files)", ErrInvalid, len(msg), len(files), MaxFiles)
	}
	fds := make([]int, 0, len(files))
	for _, f := range files {
		if err := control(f, func(fd int) { fds = append(fds, fd) }); err != nil {
			return fmt.Errorf("%w: send %s: %v", ErrInvalid, f.Name(), err)
		}
	}
	// The files must stay open until this returns: the kernel takes its
	// own references to them in the send.
	n, _, err := c.WriteMsgUnix(msg, unix.UnixRights(fds...), nil)
	if err != nil {
		return fmt.Errorf("shmring: send files: %w", err)
	}
	if n != len(msg) {
		return fmt.Errorf("shmring: send files: short write of %d bytes of %d", n, len(msg))
	}
	return nil
}

// RecvFiles receives one message into buf and the files attached to it,
// at most max of them. A message with more, or whose descriptors were
// cut short, is an error, and every descriptor that came with it is
// closed: a peer cannot make the receiver leak descriptors.
func RecvFiles(c *net.UnixConn, buf []byte, max int) (int, []*os.File, error) {
	if max < 0 || max > MaxFiles {
		return 0, nil, fmt.Errorf("%w: receive at most %d files (limit %d)", ErrInvalid, max, MaxFiles)
	}
	// Room for more than max, so that a peer sending too many is seen
	// and its descriptors closed rather than truncated away.
	oob := make([]byte, unix.CmsgSpace(4*MaxFiles*2))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return n, nil, fmt.Errorf("shmring: receive files: %w", err)
	}
	var fds []int
	cmsgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	if perr == nil {
		for _, m := range cmsgs {
			got, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			fds = append(fds, got...)
		}
	}
	bad := perr != nil || flags&unix.MSG_CTRUNC != 0 || len(fds) > max
	if bad {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return n, nil, fmt.Errorf("%w: message with %d descriptors (at most %d), truncated %v", ErrBadFiles, len(fds), max, flags&unix.MSG_CTRUNC != 0)
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "shmring-received")
	}
	return n, files, nil
}
