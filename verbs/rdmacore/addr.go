//go:build rdmacore

package rdmacore

// #include "shim.h"
// #include <netinet/in.h>
import "C"

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

// parseAddr parses "ip:port", "ip" or ":port" (IPv4; an empty ip is the
// wildcard).
func parseAddr(s string, portOptional bool) (netip.AddrPort, error) {
	host, port := s, "0"
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if !portOptional {
		return netip.AddrPort{}, fmt.Errorf("rdmacore: address %q: %w", s, verbs.ErrInvalidArgument)
	}
	ip := netip.IPv4Unspecified()
	if host != "" {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Unmap().Is4() {
			return netip.AddrPort{}, fmt.Errorf("rdmacore: address %q (IPv4 only): %w", s, verbs.ErrInvalidArgument)
		}
		ip = a.Unmap()
	}
	var pn uint16
	if _, err := fmt.Sscanf(port, "%d", &pn); err != nil {
		return netip.AddrPort{}, fmt.Errorf("rdmacore: port of %q: %w", s, verbs.ErrInvalidArgument)
	}
	return netip.AddrPortFrom(ip, pn), nil
}

// sockaddr is a struct sockaddr_in for ap.
func sockaddr(ap netip.AddrPort) C.struct_sockaddr_in {
	var sa C.struct_sockaddr_in
	sa.sin_family = C.AF_INET
	b := (*[2]byte)(unsafe.Pointer(&sa.sin_port))
	binary.BigEndian.PutUint16(b[:], ap.Port())
	ip := ap.Addr().As4()
	*(*[4]byte)(unsafe.Pointer(&sa.sin_addr)) = ip
	return sa
}

func sockaddrPtr(sa *C.struct_sockaddr_in) *C.struct_sockaddr {
	return (*C.struct_sockaddr)(unsafe.Pointer(sa))
}

// tcpAddrOf converts a struct sockaddr of librdmacm.
func tcpAddrOf(sa *C.struct_sockaddr) *net.TCPAddr {
	if sa == nil {
		return &net.TCPAddr{}
	}
	switch sa.sa_family {
	case C.AF_INET:
		in := (*C.struct_sockaddr_in)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&in.sin_port))[:])
		ip := *(*[4]byte)(unsafe.Pointer(&in.sin_addr))
		return &net.TCPAddr{IP: net.IP(ip[:]), Port: int(port)}
	case C.AF_INET6:
		in := (*C.struct_sockaddr_in6)(unsafe.Pointer(sa))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&in.sin6_port))[:])
		ip := *(*[16]byte)(unsafe.Pointer(&in.sin6_addr))
		return &net.TCPAddr{IP: net.IP(ip[:]), Port: int(port)}
	}
	return &net.TCPAddr{}
}

// idDevice names the device an rdma_cm id is bound to ("" while unbound).
func idDevice(id *C.struct_rdma_cm_id) string {
	if id.verbs == nil {
		return ""
	}
	return C.GoString(C.ibv_get_device_name(id.verbs.device))
}
