package perf

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Test names a workload.
type Test uint8

const (
	TestWrite    Test = 1 // RDMA Write bandwidth
	TestSendRate Test = 2 // one-way Send message rate
	TestPingPong Test = 3 // Send/echo round trip
)

func (t Test) String() string {
	switch t {
	case TestWrite:
		return "write"
	case TestSendRate:
		return "send"
	case TestPingPong:
		return "pingpong"
	}
	return fmt.Sprintf("test(%d)", uint8(t))
}

// request is the client's connect private data.
//
//	0  1  version (1)
//	1  1  test
//	2  2  reserved
//	4  4  message size
//	8  4  receive depth the server should post
type request struct {
	test  Test
	size  uint32
	depth uint32
}

const (
	protoVersion = 1
	requestLen   = 12
	replyLen     = 16
)

func (r request) append(b []byte) []byte {
	b = append(b, protoVersion, byte(r.test), 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.size)
	return binary.BigEndian.AppendUint32(b, r.depth)
}

func parseRequest(b []byte) (request, error) {
	if len(b) < requestLen || b[0] != protoVersion {
		return request{}, fmt.Errorf("perf: bad request (%d bytes)", len(b))
	}
	r := request{test: Test(b[1]), size: binary.BigEndian.Uint32(b[4:]), depth: binary.BigEndian.Uint32(b[8:])}
	if r.test < TestWrite || r.test > TestPingPong || r.size > MaxSize || r.depth == 0 || r.depth > maxDepth {
		return request{}, fmt.Errorf("perf: bad request %+v", r)
	}
	return r, nil
}

// reply is the server's accept private data: where the client may write.
//
//	0  8  buffer address
//	8  4  rkey
//	12 4  buffer length
type reply struct {
	addr uint64
	rkey uint32
	size uint32
}

func (r reply) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.addr)
	b = binary.BigEndian.AppendUint32(b, r.rkey)
	return binary.BigEndian.AppendUint32(b, r.size)
}

func parseReply(b []byte) (reply, error) {
	if len(b) < replyLen {
		return reply{}, fmt.Errorf("perf: bad reply (%d bytes)", len(b))
	}
	return reply{addr: binary.BigEndian.Uint64(b), rkey: binary.BigEndian.Uint32(b[8:]), size: binary.BigEndian.Uint32(b[12:])}, nil
}

// Limits.
const (
	MaxSize  = 16 << 20
	maxDepth = 4096
)

// Result is one measured figure.
type Result struct {
	Test     Test
	Size     int
	Duration time.Duration
	Bytes    uint64
	Msgs     uint64
	// Latencies of round trips (TestPingPong only), sorted.
	RTTs []time.Duration
}

// MBps returns the bandwidth in MB/s (10^6 bytes).
func (r *Result) MBps() float64 { return float64(r.Bytes) / r.Duration.Seconds() / 1e6 }

// Rate returns messages per second.
func (r *Result) Rate() float64 { return float64(r.Msgs) / r.Duration.Seconds() }

// Percentile returns the p-th percentile round trip (0 < p <= 100).
func (r *Result) Percentile(p float64) time.Duration {
	if len(r.RTTs) == 0 {
		return 0
	}
	i := int(float64(len(r.RTTs))*p/100+0.5) - 1
	i = max(0, min(i, len(r.RTTs)-1))
	return r.RTTs[i]
}
