package wire

import "encoding/binary"

// Congestion maps (net/rds/cong.c). Every address has a 65536-bit map, one
// bit per RDS port, set while the socket bound to that port holds more
// than its SO_RCVBUF of unread payload. A node sends its whole map (never
// a delta) to every peer whenever a bit changes and as the first message
// on every new path; senders test the peer's bit before queueing.
const (
	// CongMapBytes is RDS_CONG_MAP_BYTES, the payload length of a map
	// update. Receivers ignore updates of any other length.
	CongMapBytes = 65536 / 8
	// CongMonitorSize is RDS_CONG_MONITOR_SIZE: monitor masks group the
	// ports into 64 classes by port % 64.
	CongMonitorSize = 64
)

// CongMap is one congestion bitmap in its wire form. Port p is byte p/8,
// bit p%8 counted from the least significant bit (the kernel's
// little-endian bitops), independent of host byte order.
type CongMap [CongMapBytes]byte

// Set marks port p congested.
func (m *CongMap) Set(p Port) { m[p>>3] |= 1 << (p & 7) }

// Clear marks port p uncongested.
func (m *CongMap) Clear(p Port) { m[p>>3] &^= 1 << (p & 7) }

// Test reports whether port p is congested.
func (m *CongMap) Test(p Port) bool { return m[p>>3]&(1<<(p&7)) != 0 }

// Uncongested returns the RDS_CONG_MONITOR port-group mask of the ports
// that are congested in old and not in new: old &^ new taken 64 bits at a
// time as little-endian words and OR-folded, so bit i stands for every port
// with p % 64 == i (rds_ib_cong_recv).
func Uncongested(old, new *CongMap) uint64 {
	var mask uint64
	for i := 0; i < CongMapBytes; i += 8 {
		o := binary.LittleEndian.Uint64(old[i:])
		n := binary.LittleEndian.Uint64(new[i:])
		mask |= o &^ n
	}
	return mask
}

// CongMonitorBit is RDS_CONG_MONITOR_BIT(port).
func CongMonitorBit(p Port) uint { return uint(p) % CongMonitorSize }

// CongMonitorMask is RDS_CONG_MONITOR_MASK(port): the 64-bit mask bit
// that RDS_CONG_MONITOR and RDS_CMSG_CONG_UPDATE use for port p.
func CongMonitorMask(p Port) uint64 { return 1 << CongMonitorBit(p) }

// CongMapFields returns the header of a congestion map update: sequence
// 0, ports 0, length 8192, flags exactly FlagCongBitmap, no extensions. It
// consumes no sequence number and is never retransmitted.
func CongMapFields() Fields {
	return Fields{Len: CongMapBytes, Flags: FlagCongBitmap}
}
