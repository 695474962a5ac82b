package verbs

import (
	"context"
	"fmt"
)

// Transport says how a device moves data.
type Transport uint8

const (
	TransportIWARP  Transport = iota // RDMAP/DDP/MPA over TCP
	TransportMemory                  // inside one process
	TransportRoCE                    // InfiniBand transport over Ethernet (RoCE)
	TransportIB                      // InfiniBand
)

func (t Transport) String() string {
	switch t {
	case TransportIWARP:
		return "iWARP"
	case TransportMemory:
		return "memory"
	case TransportRoCE:
		return "RoCE"
	case TransportIB:
		return "InfiniBand"
	}
	return fmt.Sprintf("Transport(%d)", uint8(t))
}

// DeviceAttr are a device's attributes and limits, as ibv_query_device
// reports them.
type DeviceAttr struct {
	Name      string
	Provider  string
	Transport Transport
	FWVersion string
	VendorID  uint32

	MaxMRSize   uint64
	MaxQP       int
	MaxQPWR     int // per send or receive queue
	MaxSGE      int // per send or receive work request
	MaxSGERead  int // local SGEs of an RDMA Read
	MaxCQ       int
	MaxCQE      int
	MaxMR       int
	MaxMW       int
	MaxPD       int
	MaxSRQ      int
	MaxSRQWR    int
	MaxSRQSGE   int
	MaxIRD      int // max responder resources per QP (max_qp_rd_atom)
	MaxORD      int // max initiator depth per QP (max_qp_init_rd_atom)
	MaxInline   int
	MaxPrivData int
}

// DeviceStats are counters a device keeps for diagnosis.
type DeviceStats struct {
	QPsCreated         uint64
	ConnsEstablished   uint64
	ConnsRejected      uint64
	TerminatesSent     uint64
	TerminatesReceived uint64
	MalformedFrames    uint64 // inbound frames that failed validation
	CRCErrors          uint64
	ProtectionErrors   uint64 // remote accesses refused (key, bounds, rights)
	CQOverflows        uint64
	AsyncEventsDropped uint64 // async events lost because nobody read them
	BytesSent          uint64
	BytesReceived      uint64
	// InlineFrames counts inbound frames that a goroutine waiting on a CQ
	// read and placed itself instead of the provider's receive goroutine
	// (providers without such a mode leave it 0).
	InlineFrames uint64
	// InlineSends counts transmit runs that a goroutine waiting on a CQ
	// made for work a poster left it (siw's Options.TransmitInWait).
	InlineSends uint64
}

// Device is an opened RDMA device.
type Device interface {
	Name() string
	Query() DeviceAttr
	Stats() DeviceStats
	AllocPD() (PD, error)
	CreateCQ(attr CQAttr) (CQ, error)
	// Listen starts a passive endpoint on addr ("ip:port"; port 0 picks
	// one; an empty ip listens on every address of the device).
	Listen(addr string, backlog int) (Listener, error)
	// Connect connects qp (in RESET or INIT) to a listener at addr and
	// moves it to RTS. It fails with a *RejectError when the peer rejects,
	// with ErrUnreachable when nothing answers in time; ctx bounds the
	// whole setup.
	Connect(ctx context.Context, qp QP, addr string, p ConnParam) (Conn, error)
	// AsyncEvents delivers the device's asynchronous events. The channel is
	// closed by Close.
	AsyncEvents() <-chan AsyncEvent
	// Close closes every object of the device: connections are torn down,
	// outstanding requests flushed, listeners closed.
	Close() error
}

// Provider opens devices of one kind. Providers are passed around as
// values; verbs/all lists the ones built into godapl.
type Provider interface {
	// Name is the provider's short name ("siw", "mem").
	Name() string
	// Devices lists the names of the devices Open accepts.
	Devices() ([]string, error)
	// Open opens a device by name; unknown names fail with ErrNoDevice.
	Open(name string) (Device, error)
}
