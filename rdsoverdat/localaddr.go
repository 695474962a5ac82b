package rdsoverdat

import (
	"net"
	"net/netip"
	"syscall"

	"github.com/jsimonetti/rtnetlink"
	"golang.org/x/sys/unix"
)

// IsLocalAddr reports whether addr is local to the network namespace of
// the calling process, the test the kernel's rds_tcp makes at bind
// (inet_addr_type == RTN_LOCAL): it asks the kernel's routing tables
// through rtnetlink (RTM_GETROUTE) whether a packet to addr would be
// delivered locally. That covers interface addresses and every address of
// a local route, such as all of 127.0.0.0/8 on lo.
func IsLocalAddr(addr netip.Addr) (bool, error) {
	if !addr.Is4() {
		return false, nil
	}
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		return false, err
	}
	defer c.Close()
	a := addr.As4()
	routes, err := c.Route.Get(&rtnetlink.RouteMessage{
		Family:     unix.AF_INET,
		DstLength:  32,
		Attributes: rtnetlink.RouteAttributes{Dst: net.IP(a[:])},
	})
	if err != nil {
		// No route at all (ENETUNREACH and friends): not local.
		if errno, ok := underlyingErrno(err); ok && errno != syscall.EPERM {
			return false, nil
		}
		return false, err
	}
	for _, r := range routes {
		if r.Type == unix.RTN_LOCAL {
			return true, nil
		}
	}
	return false, nil
}

// underlyingErrno digs the errno out of a netlink error.
func underlyingErrno(err error) (syscall.Errno, bool) {
	for err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return e, true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return 0, false
		}
		err = u.Unwrap()
	}
	return 0, false
}
