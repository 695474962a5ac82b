package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"unsafe"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// The host kernel's tables, read as rds-tools' rds-info reads them:
// getsockopt(SOL_RDS, RDS_INFO_*) on any AF_RDS socket fills the buffer
// with fixed-size records and returns the record size; a buffer too small
// fails with ENOSPC and the length needed (net/rds/info.c). The records
// are packed structs of include/uapi/linux/rds.h: host-endian counters
// and lengths, big-endian addresses and ports.

// rds_info_counter: u8 name[32]; u64 value.
const (
	ctrName  = 0
	ctrValue = 32
	ctrLen   = 40
)

// rds_info_connection: u64 next_tx_seq; u64 next_rx_seq; be32 laddr;
// be32 faddr; u8 transport[16]; u8 flags; u8 tos.
const (
	connNextTX    = 0
	connNextRX    = 8
	connLAddr     = 16
	connFAddr     = 20
	connTransport = 24
	connFlags     = 40
	connLen       = 42

	connFlagConnected = 0x04 // RDS_INFO_CONNECTION_FLAG_CONNECTED
)

// rds_info_socket: u32 sndbuf; be32 bound_addr; be32 connected_addr;
// be16 bound_port; be16 connected_port; u32 rcvbuf; u64 inum.
const (
	sockSndBuf    = 0
	sockBoundAddr = 4
	sockBoundPort = 12
	sockRcvBuf    = 16
	sockLen       = 28
)

var errRecordSize = errors.New("RDS_INFO record smaller than its struct")

// kernelDocument reads the kernel's counters, connections and sockets,
// and the other tables o asks for.
func (o *options) kernelDocument() (rdstool.Document, kernelTables, error) {
	doc := rdstool.Document{Tool: "kernel"}
	if err := rdsoverdat.KernelAvailable(); err != nil {
		return doc, kernelTables{}, fmt.Errorf("the host kernel has no RDS (load the rds module): %w", err)
	}
	fd, err := unix.Socket(unix.AF_RDS, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return doc, kernelTables{}, fmt.Errorf("socket(AF_RDS): %w", err)
	}
	defer unix.Close(fd)
	kt, err := o.readKernelTables(fd)
	if err != nil {
		return doc, kt, err
	}
	tables := map[int][]byte{}
	sizes := map[int]int{}
	for _, opt := range []int{wire.RDS_INFO_COUNTERS, wire.RDS_INFO_CONNECTIONS, wire.RDS_INFO_SOCKETS} {
		b, size, err := rdsInfo(fd, opt)
		if err != nil {
			return doc, kt, fmt.Errorf("getsockopt(RDS_INFO %d): %w", opt, err)
		}
		tables[opt], sizes[opt] = b, size
	}
	info, err := parseKernel(tables[wire.RDS_INFO_COUNTERS], sizes[wire.RDS_INFO_COUNTERS],
		tables[wire.RDS_INFO_CONNECTIONS], sizes[wire.RDS_INFO_CONNECTIONS],
		tables[wire.RDS_INFO_SOCKETS], sizes[wire.RDS_INFO_SOCKETS])
	doc.Stacks = []rdsoverdat.Info{info}
	return doc, kt, err
}

// rdsInfo returns one RDS_INFO table and its record size.
func rdsInfo(fd, opt int) ([]byte, int, error) {
	buf := make([]byte, 4096)
	for {
		l := uint32(len(buf))
		r, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), wire.SOL_RDS, uintptr(opt),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
		switch {
		case e == unix.ENOSPC && int(l) > len(buf):
			buf = make([]byte, int(l)+4096) // the table may grow before the next try
		case e != 0:
			return nil, 0, e
		default:
			return buf[:min(int(l), len(buf))], int(r), nil
		}
	}
}

// parseKernel turns the three tables into an Info: one node per local
// address of a socket or connection, and the namespace's counters on a
// node without an address.
func parseKernel(ctrs []byte, ctrSize int, conns []byte, connSize int, socks []byte, sockSize int) (rdsoverdat.Info, error) {
	info := rdsoverdat.Info{Kernel: true}
	nodes := map[netip.Addr]*rdsoverdat.NodeInfo{}
	node := func(a netip.Addr) *rdsoverdat.NodeInfo {
		if nodes[a] == nil {
			nodes[a] = &rdsoverdat.NodeInfo{Addr: a}
		}
		return nodes[a]
	}
	var counters []rdsoverdat.Counter
	err := records(ctrs, ctrSize, ctrLen, func(r []byte) {
		name, _, _ := bytes.Cut(r[ctrName:ctrValue], []byte{0})
		counters = append(counters, rdsoverdat.Counter{Name: string(name),
			Value: binary.NativeEndian.Uint64(r[ctrValue:])})
	})
	if err != nil {
		return info, err
	}
	err = records(conns, connSize, connLen, func(r []byte) {
		l, f := addr4(r[connLAddr:]), addr4(r[connFAddr:])
		name, _, _ := bytes.Cut(r[connTransport:connFlags], []byte{0})
		n := node(l)
		n.Conns = append(n.Conns, rdsoverdat.ConnInfo{Local: l, Remote: f, Transport: string(name), NPaths: 1,
			Paths: []rdsoverdat.PathInfo{{
				Up:     r[connFlags]&connFlagConnected != 0,
				NextTX: wire.Seq(binary.NativeEndian.Uint64(r[connNextTX:])),
				NextRX: wire.Seq(binary.NativeEndian.Uint64(r[connNextRX:])),
			}}})
	})
	if err != nil {
		return info, err
	}
	err = records(socks, sockSize, sockLen, func(r []byte) {
		a := netip.AddrPortFrom(addr4(r[sockBoundAddr:]), binary.BigEndian.Uint16(r[sockBoundPort:]))
		n := node(a.Addr())
		n.Sockets = append(n.Sockets, rdsoverdat.SocketInfo{Bound: a,
			SendBuffer: int(binary.NativeEndian.Uint32(r[sockSndBuf:])),
			RecvBuffer: int(binary.NativeEndian.Uint32(r[sockRcvBuf:]))})
	})
	if err != nil {
		return info, err
	}
	if len(counters) > 0 {
		node(netip.Addr{}).Counters = counters
	}
	for _, n := range nodes {
		info.Nodes = append(info.Nodes, *n)
	}
	slices.SortFunc(info.Nodes, func(a, b rdsoverdat.NodeInfo) int { return a.Addr.Compare(b.Addr) })
	return info, nil
}

// records calls f on each size-byte record of b; records longer than the
// struct this program knows (a newer kernel) are fine, shorter ones not.
func records(b []byte, size, want int, f func([]byte)) error {
	if len(b) == 0 {
		return nil
	}
	if size < want {
		return fmt.Errorf("%w: %d < %d", errRecordSize, size, want)
	}
	for ; len(b) >= size; b = b[size:] {
		f(b[:size])
	}
	return nil
}

func addr4(b []byte) netip.Addr { return netip.AddrFrom4([4]byte(b[:4])) }
