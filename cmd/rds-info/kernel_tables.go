package main

import (
	"encoding/binary"
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The kernel's tables that rdsoverdat.Info has no place for: messages in
// the send, retransmit and receive queues (-s, -t, -r), rds_tcp's
// sockets (-T) and the RDMA transport's connections (-I).

// kernelTables holds them, read only when asked for.
type kernelTables struct {
	Send    []msgRow `json:"send_queue,omitempty"`
	Retrans []msgRow `json:"retransmit_queue,omitempty"`
	Recv    []msgRow `json:"receive_queue,omitempty"`
	TCP     []tcpRow `json:"tcp_sockets,omitempty"`
	IB      []ibRow  `json:"ib_connections,omitempty"`
}

// rds_info_message (packed): u64 seq; u32 len; be32 laddr; be32 faddr;
// be16 lport; be16 fport; u8 flags; u8 tos.
const (
	msgSeq   = 0
	msgLen   = 8
	msgLAddr = 12
	msgFAddr = 16
	msgLPort = 20
	msgFPort = 22
	msgTos   = 25
	msgSize  = 26
)

type msgRow struct {
	Local  netip.AddrPort `json:"local"`
	Remote netip.AddrPort `json:"remote"`
	Tos    uint8          `json:"tos"`
	Seq    uint64         `json:"seq"`
	Bytes  uint32         `json:"bytes"`
}

func parseMsgs(b []byte, size int) ([]msgRow, error) {
	var rows []msgRow
	err := records(b, size, msgSize, func(r []byte) {
		rows = append(rows, msgRow{
			Local:  netip.AddrPortFrom(addr4(r[msgLAddr:]), binary.BigEndian.Uint16(r[msgLPort:])),
			Remote: netip.AddrPortFrom(addr4(r[msgFAddr:]), binary.BigEndian.Uint16(r[msgFPort:])),
			Tos:    r[msgTos],
			Seq:    binary.NativeEndian.Uint64(r[msgSeq:]),
			Bytes:  binary.NativeEndian.Uint32(r[msgLen:]),
		})
	})
	return rows, err
}

// rds_info_tcp_socket (packed): be32 local_addr; be16 local_port;
// be32 peer_addr; be16 peer_port; u64 hdr_rem; u64 data_rem;
// u32 last_sent_nxt; u32 last_expected_una; u32 last_seen_una; u8 tos.
const (
	tcpLAddr   = 0
	tcpLPort   = 4
	tcpFAddr   = 6
	tcpFPort   = 10
	tcpHdrRem  = 12
	tcpDataRem = 20
	tcpSentNxt = 28
	tcpExpUna  = 32
	tcpSeenUna = 36
	tcpSize    = 40
)

type tcpRow struct {
	Local      netip.AddrPort `json:"local"`
	Remote     netip.AddrPort `json:"remote"`
	HdrRemain  uint64         `json:"hdr_remain"`
	DataRemain uint64         `json:"data_remain"`
	SentNxt    uint32         `json:"sent_nxt"`
	ExpectUna  uint32         `json:"expect_una"`
	SeenUna    uint32         `json:"seen_una"`
}

func parseTCP(b []byte, size int) ([]tcpRow, error) {
	var rows []tcpRow
	err := records(b, size, tcpSize, func(r []byte) {
		rows = append(rows, tcpRow{
			Local:      netip.AddrPortFrom(addr4(r[tcpLAddr:]), binary.BigEndian.Uint16(r[tcpLPort:])),
			Remote:     netip.AddrPortFrom(addr4(r[tcpFAddr:]), binary.BigEndian.Uint16(r[tcpFPort:])),
			HdrRemain:  binary.NativeEndian.Uint64(r[tcpHdrRem:]),
			DataRemain: binary.NativeEndian.Uint64(r[tcpDataRem:]),
			SentNxt:    binary.NativeEndian.Uint32(r[tcpSentNxt:]),
			ExpectUna:  binary.NativeEndian.Uint32(r[tcpExpUna:]),
			SeenUna:    binary.NativeEndian.Uint32(r[tcpSeenUna:]),
		})
	})
	return rows, err
}

// rds_info_rdma_connection: be32 src_addr; be32 dst_addr; u8 src_gid[16];
// u8 dst_gid[16]; u32 max_send_wr; u32 max_recv_wr; u32 max_send_sge;
// u32 rdma_mr_max; u32 rdma_mr_size; u8 tos; u8 sl; ...
const (
	ibSrc     = 0
	ibDst     = 4
	ibSrcGID  = 8
	ibDstGID  = 24
	ibSendWR  = 40
	ibRecvWR  = 44
	ibSendSGE = 48
	ibMRMax   = 52
	ibMRSize  = 56
	ibTos     = 60
	ibSL      = 61
	ibSize    = 62
)

type ibRow struct {
	Local      netip.Addr `json:"local"`
	Remote     netip.Addr `json:"remote"`
	Tos        uint8      `json:"tos"`
	SL         uint8      `json:"sl"`
	LocalGID   netip.Addr `json:"local_gid"`
	RemoteGID  netip.Addr `json:"remote_gid"`
	SendWR     uint32     `json:"send_wr"`
	RecvWR     uint32     `json:"recv_wr"`
	SendSGE    uint32     `json:"send_sge"`
	RDMAMRMax  uint32     `json:"rdma_mr_max"`
	RDMAMRSize uint32     `json:"rdma_mr_size"`
}

func parseIB(b []byte, size int) ([]ibRow, error) {
	var rows []ibRow
	err := records(b, size, ibSize, func(r []byte) {
		rows = append(rows, ibRow{
			Local: addr4(r[ibSrc:]), Remote: addr4(r[ibDst:]), Tos: r[ibTos], SL: r[ibSL],
			LocalGID:  netip.AddrFrom16([16]byte(r[ibSrcGID : ibSrcGID+16])),
			RemoteGID: netip.AddrFrom16([16]byte(r[ibDstGID : ibDstGID+16])),
			SendWR:    binary.NativeEndian.Uint32(r[ibSendWR:]),
			RecvWR:    binary.NativeEndian.Uint32(r[ibRecvWR:]),
			SendSGE:   binary.NativeEndian.Uint32(r[ibSendSGE:]),
			RDMAMRMax: binary.NativeEndian.Uint32(r[ibMRMax:]), RDMAMRSize: binary.NativeEndian.Uint32(r[ibMRSize:]),
		})
	})
	return rows, err
}

// readKernelTables reads the tables o asks for from the AF_RDS socket
// fd. A table the kernel does not have (rds_tcp or rds_rdma not loaded)
// is left empty, as the real tool prints it.
func (o *options) readKernelTables(fd int) (kernelTables, error) {
	var kt kernelTables
	read := func(want bool, opt int, parse func([]byte, int) error) error {
		if !want {
			return nil
		}
		b, size, err := rdsInfo(fd, opt)
		if err != nil {
			return nil // the transport's module is not loaded
		}
		return parse(b, size)
	}
	var err error
	for _, t := range []struct {
		want bool
		opt  int
		rows *[]msgRow
	}{
		{o.sendQ, wire.RDS_INFO_SEND_MESSAGES, &kt.Send},
		{o.retransQ, wire.RDS_INFO_RETRANS_MESSAGES, &kt.Retrans},
		{o.recvQ, wire.RDS_INFO_RECV_MESSAGES, &kt.Recv},
	} {
		if err = read(t.want, t.opt, func(b []byte, n int) (e error) { *t.rows, e = parseMsgs(b, n); return }); err != nil {
			return kt, err
		}
	}
	if err = read(o.tcp, wire.RDS_INFO_TCP_SOCKETS, func(b []byte, n int) (e error) { kt.TCP, e = parseTCP(b, n); return }); err != nil {
		return kt, err
	}
	err = read(o.ib, wire.RDS_INFO_IB_CONNECTIONS, func(b []byte, n int) (e error) { kt.IB, e = parseIB(b, n); return })
	return kt, err
}
