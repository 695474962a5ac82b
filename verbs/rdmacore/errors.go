//go:build rdmacore

package rdmacore

import (
	"fmt"
	"syscall"

	"github.com/godapl/godapl/verbs"
)

// errnoErr maps an errno of libibverbs or librdmacm to the verbs sentinel
// that means the same, wrapped with what failed and the errno, so that
// both errors.Is(err, verbs.ErrX) and errors.Is(err, syscall.EX) work.
func errnoErr(what string, errno syscall.Errno) error {
	return fmt.Errorf("rdmacore: %s: %w (%w)", what, sentinelOf(errno), errno)
}

func sentinelOf(errno syscall.Errno) error {
	switch errno {
	case syscall.EINVAL, syscall.EOPNOTSUPP + 0, syscall.ERANGE:
		if errno == syscall.EOPNOTSUPP {
			return verbs.ErrNotSupported
		}
		return verbs.ErrInvalidArgument
	case syscall.ENOMEM, syscall.ENOSPC, syscall.EAGAIN:
		return verbs.ErrNoResources
	case syscall.EBUSY:
		return verbs.ErrInUse
	case syscall.ENOSYS, syscall.EPROTONOSUPPORT:
		return verbs.ErrNotSupported
	case syscall.ENODEV, syscall.ENXIO:
		return verbs.ErrNoDevice
	case syscall.EACCES, syscall.EPERM, syscall.EFAULT:
		return verbs.ErrProtection
	case syscall.ECONNREFUSED:
		return verbs.ErrRejected
	case syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.EADDRNOTAVAIL:
		return verbs.ErrUnreachable
	}
	return verbs.ErrInvalidArgument
}
