package verbs

import "fmt"

// SGE is one scatter/gather element: Length bytes starting at Addr inside
// the memory registration whose local key is LKey. Addr is in the MR's
// address space (MR.Addr() is its first byte), as in libibverbs.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// MaxSGE is the largest scatter/gather list any provider of this package
// accepts per work request. Providers may report a smaller limit in
// DeviceAttr; queues preallocate this many slots per work request.
const MaxSGE = 6

// Opcode selects the operation of a send work request.
type Opcode uint8

const (
	// OpSend sends the gathered bytes as one message that consumes one
	// receive at the peer.
	OpSend Opcode = iota
	// OpSendWithInv is OpSend that also invalidates InvalidateRKey at the
	// peer once the message is placed.
	OpSendWithInv
	// OpRDMAWrite places the gathered bytes at RemoteAddr in the peer memory
	// named by RKey, without the peer's involvement.
	OpRDMAWrite
	// OpRDMARead fetches bytes from RemoteAddr/RKey at the peer into the
	// (single) local scatter element.
	OpRDMARead
	// OpBindMW binds a memory window to a range of an MR (see MWBind).
	OpBindMW
	// OpLocalInv invalidates InvalidateRKey (an MR or MW of this side).
	OpLocalInv
	numOpcodes
)

var opcodeNames = [...]string{
	OpSend:        "SEND",
	OpSendWithInv: "SEND_WITH_INV",
	OpRDMAWrite:   "RDMA_WRITE",
	OpRDMARead:    "RDMA_READ",
	OpBindMW:      "BIND_MW",
	OpLocalInv:    "LOCAL_INV",
}

func (o Opcode) String() string {
	if o < numOpcodes {
		return opcodeNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// Valid reports whether o is a known opcode.
func (o Opcode) Valid() bool { return o < numOpcodes }

// SendFlags modify a send work request.
type SendFlags uint8

const (
	// SendSignaled asks for a completion even when the QP was created with
	// SignalAll false. Unsignaled requests that succeed produce no WC; failed
	// or flushed ones always do.
	SendSignaled SendFlags = 1 << iota
	// SendSolicited marks a Send as a solicited event for the receiver
	// (RDMAP Send with Solicited Event).
	SendSolicited
	// SendFence holds this request until every earlier RDMA Read on the
	// QP has completed.
	SendFence
	// SendInline makes the provider copy the gathered bytes (at most the
	// QP's MaxInlineData) at post time, so the caller may reuse the memory
	// as soon as PostSend returns. The SGEs must still name registered
	// memory: Go gives no safe way to read an unregistered address.
	SendInline
)

// MWBind describes an OpBindMW request: after the bind, MW.RKey() grants
// the peer Access to Length bytes from Addr inside MR, and nothing else.
type MWBind struct {
	MW     MW
	MR     MR
	Addr   uint64
	Length uint64
	Access Access
}

// SendWR is a work request for a QP's send queue. The provider copies it
// (and SGL) when it is posted.
type SendWR struct {
	ID     uint64 // returned in the WC
	Opcode Opcode
	Flags  SendFlags
	SGL    []SGE // at most the QP's MaxSendSGE; OpRDMARead takes exactly one

	// RemoteAddr and RKey name the peer memory of OpRDMAWrite and OpRDMARead.
	RemoteAddr uint64
	RKey       uint32

	// InvalidateRKey is the key OpSendWithInv invalidates at the peer, or
	// OpLocalInv invalidates locally.
	InvalidateRKey uint32

	// Bind is used by OpBindMW only.
	Bind MWBind
}

// RecvWR is a work request for a receive queue or an SRQ: the next
// incoming message is scattered over SGL, front to back.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// SGLLen returns the total byte length of a scatter/gather list.
func SGLLen(sgl []SGE) uint64 {
	var n uint64
	for i := range sgl {
		n += uint64(sgl[i].Length)
	}
	return n
}
