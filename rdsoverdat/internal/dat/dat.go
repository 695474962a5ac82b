package dat

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/dat/srq"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The dat transport carries RDS over the DAT API (package dat), modelled on
// the kernel's rds_ib (net/rds/ib*.c; docs/WIRE.md, R4):
//
//   - Per node: one IA on the node's address, one PZ, one SRQ whose
//     receive buffers (48-byte header slot + one fragment each) come
//     from preregistered LMR chunks (more are added as connections need
//     them, dat_credit.go) and are reposted as soon as their
//     completion is consumed, one PSP on conn_qual 18634 (RDS_PORT, the
//     historical RDS-over-IB port), and one EVD that takes every stream:
//     receive and send completions, connection requests and connection
//     events. One goroutine at a time takes its events: the node's
//     event goroutine (dat_event.go), or a RecvMsg it lent that role
//     to (dat_role.go).
//   - Per connection (one path: like rds_ib the transport is not
//     multipath): one DAT EP created with the node's SRQ. Either side may
//     connect; when both do at once the smaller address's connection wins
//     (the larger side accepts the smaller's request and drops its own,
//     the smaller side rejects the larger's). The private data is
//     rds_ib_connect_private (dat_private.go).
//   - On InfiniBand and RoCE, where the kernel's rds_rdma can be the
//     peer, races, private data, credits and the probe follow the kernel
//     instead (dat_kernel.go).
//   - Messages travel as max(1, ceil(len/4096)) Sends of a header copy
//     plus one fragment, the last one solicited, headers checksummed
//     (dat_send.go); the receiver reassembles one message at a time per
//     connection (dat_recv.go). Between two godapl nodes fragments are
//     16 KiB instead, offered in the private data (dat_frag.go).
//   - Credits (dat_credit.go) stop a sender from overrunning the peer's
//     posted receives, which iWARP, having no RNR retry, would punish by
//     terminating the connection.
//   - Acks by RDS sequence number: h_ack piggybacked on every message,
//     ack-only frames (at most one in flight) for ACK_REQUIRED and for
//     credit advertisements.
//
// Type is TransIB: the kernel's one RDMA transport (rds_rdma) answers to
// RDS_TRANS_IB for InfiniBand, RoCE and iWARP alike; the old separate
// iWARP number (1) is deprecated and unused. So an application that asks
// for the kernel's RDMA transport with SO_RDS_TRANSPORT gets this one.
// Its name in listings is "dat", the API it runs on, since the same code
// runs over any verbs provider.

// Config is the configuration of rdsoverdat.DATConfig, whose fields it
// mirrors (their meaning is documented there).
type Config struct {
	Registry                   *dat.Registry
	IA                         string
	Port                       int
	RecvDepth                  int
	ConnCredits                int
	SendDepth                  int
	ConnectTimeout             time.Duration
	ReconnectMin, ReconnectMax time.Duration
	RDMA                       xport.RDMALimits
}

// New returns the dat transport, zero fields of cfg set to
// their defaults.
func New(cfg Config) xport.Transport {
	if cfg.Port == 0 {
		cfg.Port = wire.RDMAPort
	}
	if cfg.RecvDepth <= 0 {
		cfg.RecvDepth = 1024
	}
	cfg.RecvDepth = max(cfg.RecvDepth, 2)
	if cfg.ConnCredits <= 0 {
		cfg.ConnCredits = min(cfg.RecvDepth/4, 64)
	}
	cfg.ConnCredits = min(max(cfg.ConnCredits, 2), cfg.RecvDepth, datMaxCredits)
	if cfg.SendDepth <= 0 {
		cfg.SendDepth = 256
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = time.Millisecond
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = time.Second
	}
	return &datTransport{cfg: cfg}
}

type datTransport struct{ cfg Config }

func (*datTransport) Type() uint32 { return wire.RDS_TRANS_IB }
func (*datTransport) Name() string { return "dat" }

// Sizes of the buffers: a fragment slot is a header and one fragment.
const (
	datSlot = wire.HeaderLen + datFragMax
	// datSignalEvery: an unsuppressed send completion at least every
	// this many fragments (rds_ib's max_unsignaled_wr is 16).
	datSignalEvery = 16
	// datEVDSpare is EVD room for connection and software events beyond
	// the completions every buffer and send slot may have queued.
	datEVDSpare = 256
)

// datLocalPriv is the privileges of the node's buffers that only its own
// work requests touch (receive buffers, RDMA READ sinks): local read as
// well as write, though nothing reads them through the IA. DAT cannot
// leave the checks of an LMR without local read to verbs, which always
// lets the owner read, so one such LMR in the PZ sends every post on it
// through DAT's own checks: a Send then took the EP's queue lock twice
// and looked its segment up in the LMR table, an SRQ post likewise.
const datLocalPriv = dat.MemPrivLocalRead | dat.MemPrivLocalWrite

// datNode is the dat transport on one node.
type datNode struct {
	cfg  Config
	node xport.Node
	ia   *ia.IA
	pz   *ia.PZ
	evd  *evd.EVD
	srq  *srq.SRQ
	// rx holds the SRQ's buffers, RecvDepth per chunk; buffer i is slot
	// i%RecvDepth of chunk i/RecvDepth. Copy-on-write under mu.
	rx    atomic.Pointer[[]*lmr.LMR]
	nbufs atomic.Int64 // buffers created so far: valid cookies
	rxp   datRxPost    // which of them are posted (dat_rxpost.go)
	psp   *ep.PSP
	// kernel: the IA's device is IB or RoCE, where the transport speaks
	// like the kernel's rds_rdma (dat_kernel.go).
	kernel bool

	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	closing atomic.Bool
	wg      sync.WaitGroup // the event goroutine and reconnect timers
	xmits   atomic.Int32   // transmissions running in callers' goroutines

	// The event role's state (dat_role.go): the event goroutine's, or
	// the RecvMsg's that holds the role.
	role    datEventRole
	ev      dat.Event
	rep     datRepost // handled buffers not yet given back (dat_rxpost.go)
	wakes   []*datEP  // EPs to ack or restart after the current batch
	holding bool      // a RecvMsg holds the role
	direct  datDirect // its buffer, offered to its socket's next message
	// lendTo: a socket whose waiting RecvMsg got a message in this batch.
	lendTo xport.Receiver
	// batchMsgs: messages delivered by this batch; cool: batches left
	// before the event goroutine lends the role again (dat_role.go).
	batchMsgs, cool int
	evdLen          int
	// lastEP is the DAT EP of the last completion the role's holder
	// looked up and lastE its transport EP (epOf); retired clears them.
	lastEP *ep.EP
	lastE  *datEP

	mu       sync.Mutex
	paths    []*datPath
	eps      map[*datEP]struct{} // every EP not yet retired
	reserved int                 // SRQ buffers granted to live EPs
	capacity int                 // SRQ buffers in all

	mrs    datMRTable    // mappings lent to peers (dat_rdma_mr.go)
	locals datLocalCache // registrations of the node's own buffers
}

// Attach opens the node's IA on its address, posts the SRQ and listens.
func (t *datTransport) Attach(n xport.Node) (xport.NodeTransport, error) {
	a, err := t.openIA(n.Addr())
	if err != nil {
		return nil, fmt.Errorf("rds dat transport on %v: %w", n.Addr(), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	dn := &datNode{cfg: t.cfg, node: n, ia: a, ctx: ctx, cancel: cancel, eps: make(map[*datEP]struct{}), kernel: kernelWire(a)}
	dn.rxp.lazy.Store(!dn.kernel)
	dn.initReposts()
	if err := dn.setup(); err != nil {
		cancel()
		a.Close(dat.CloseAbrupt)
		if errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, dat.ErrConnQualInUse) {
			return nil, &xport.PortInUseError{Transport: "dat", What: fmt.Sprintf("conn_qual %d", t.cfg.Port), Addr: n.Addr(), Err: err}
		}
		return nil, fmt.Errorf("rds dat transport on %v: %w", n.Addr(), err)
	}
	dn.role.init(dn)
	dn.locals.watch()
	dn.wg.Add(1)
	go dn.routineEvents()
	return dn, nil
}

// The default IA: the soft-iWARP provider (named "siw") and its device
// that spans every local address (also "siw").
const (
	datDefaultProvider = "siw"
	datDefaultDevice   = "siw"
)

// openIA opens the node's IA: the configured entry's provider and device
// at the node's address, under a name of the node's own in a registry
// derived from the configured one.
func (t *datTransport) openIA(addr netip.Addr) (*ia.IA, error) {
	reg := t.cfg.Registry
	if reg == nil {
		// The default registry comes with an error when the interfaces
		// could not be listed; the node's IA needs none of them.
		var err error
		if reg, err = providers.Default(); reg == nil {
			return nil, err
		}
	}
	e := dat.Entry{Provider: datDefaultProvider, Device: datDefaultDevice}
	if t.cfg.IA != "" {
		named, err := reg.Lookup(t.cfg.IA)
		if err != nil {
			return nil, err
		}
		e.Provider, e.Device = named.Provider, named.Device
	}
	e.Name, e.Addr = "rds-dat-"+addr.String(), addr
	own, err := reg.With(e)
	if err != nil {
		return nil, err
	}
	return ia.OpenIn(own, e.Name, 0)
}

// setup creates the node's DAT objects and posts every receive buffer.
func (dn *datNode) setup() error {
	var err error
	if dn.pz, err = dn.ia.CreatePZ(); err != nil {
		return err
	}
	d := dn.cfg.RecvDepth
	dn.evdLen = d + datEVDSpare
	if dn.evd, err = evd.Create(dn.ia, dn.evdLen, nil, dat.EVDDTO|dat.EVDCR|dat.EVDConnection|dat.EVDSoftware); err != nil {
		return err
	}
	if dn.srq, err = srq.Create(dn.ia, dn.pz, srq.Attr{MaxRecvDTOs: d}); err != nil {
		return err
	}
	dn.rx.Store(new([]*lmr.LMR))
	dn.setTargetLocked()
	if err := dn.growLocked(); err != nil {
		return err
	}
	if err := dn.topUp(); err != nil {
		return err
	}
	dn.psp, err = ep.CreatePSP(dn.ia, dat.ConnQual(dn.cfg.Port), dn.evd, dat.PSPConsumer)
	return err
}

// growLocked adds RecvDepth receive buffers to the node: a chunk of Go
// memory (not lmr.Alloc's mapping, so that a peer's provider still
// placing data while the IA closes never touches unmapped pages),
// published before its buffers are posted so that the event goroutine can
// map any completion's cookie. dn.mu is held (or the node is not running
// yet).
func (dn *datNode) growLocked() error {
	d := dn.cfg.RecvDepth
	old := *dn.rx.Load()
	if len(old) > 0 {
		if err := dn.srq.Resize(dn.capacity + d); err != nil {
			return err
		}
	}
	l, err := lmr.Create(dn.ia, dn.pz, make([]byte, d*datSlot), datLocalPriv, dat.VATypeVA)
	if err != nil {
		return err
	}
	chunks := append(old[:len(old):len(old)], l)
	dn.rx.Store(&chunks)
	var iov [1]dat.LMRTriplet
	if err := dn.addFree(dn.capacity, d, &iov); err != nil {
		return err
	}
	dn.capacity += d
	dn.nbufs.Store(int64(dn.capacity))
	return nil
}

// post puts receive buffer i on the SRQ, with iov as scratch.
func (dn *datNode) post(i int, iov *[1]dat.LMRTriplet) error {
	d := dn.cfg.RecvDepth
	iov[0] = (*dn.rx.Load())[i/d].Triplet((i%d)*datSlot, datSlot)
	return dn.srq.PostRecv(iov[:], dat.DTOCookie(i))
}

// rxBuf returns receive buffer i.
func (dn *datNode) rxBuf(i int) []byte {
	d := dn.cfg.RecvDepth
	b := (*dn.rx.Load())[i/d].Bytes()
	return b[(i%d)*datSlot : (i%d+1)*datSlot]
}

// reserve takes a connection's share of the SRQ: ConnCredits buffers,
// growing the SRQ by RecvDepth buffers when fewer are free, or what is
// left if it cannot grow; nothing if fewer than 2 are left (one credit is
// always kept back for advertisements, so a single one is useless).
func (dn *datNode) reserve() int {
	dn.mu.Lock()
	defer dn.mu.Unlock()
	for dn.capacity-dn.reserved < dn.cfg.ConnCredits {
		if dn.eps == nil || dn.growLocked() != nil {
			break
		}
	}
	g := min(dn.cfg.ConnCredits, dn.capacity-dn.reserved)
	if g < 2 {
		return 0
	}
	dn.reserved += g
	dn.setTargetLocked()
	if dn.topUp() != nil {
		// The IA is closing: so is this connection.
		dn.reserved -= g
		dn.setTargetLocked()
		return 0
	}
	return g
}

func (dn *datNode) unreserve(g int) {
	dn.mu.Lock()
	dn.reserved -= g
	dn.setTargetLocked()
	dn.mu.Unlock()
}

// dpath returns (creating) the transport state of p.
func (dn *datNode) dpath(p xport.Path) *datPath {
	if dp, ok := p.Data().Load().(*datPath); ok {
		return dp
	}
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if dp, ok := p.Data().Load().(*datPath); ok {
		return dp
	}
	dp := &datPath{dn: dn, p: p, raddr: p.Conn().RemoteAddr()}
	dp.ahead.Init(datRDMALookahead)
	p.Data().Store(dp)
	dn.paths = append(dn.paths, dp)
	return dp
}

// AcksBySequence marks the transport as acknowledging by h_ack.
func (dn *datNode) AcksBySequence() {}

func (dn *datNode) Connect(p xport.Path) { dn.dpath(p).connect(false) }

func (dn *datNode) Kick(p xport.Path) {
	dp := dn.dpath(p)
	if dp.up.Load() != nil {
		dp.kick()
		return
	}
	dp.connect(false)
}

func (dn *datNode) Reset(p xport.Path) {
	dp := dn.dpath(p)
	dp.mu.Lock()
	e := dp.ep
	dp.mu.Unlock()
	if e != nil {
		e.ep.Disconnect(dat.CloseAbrupt)
	}
}

// Close stops the event goroutine and the timers, waits for transmissions
// running in other goroutines, and closes the IA, which frees every EP,
// the PSP, the SRQ and the memory.
func (dn *datNode) Close() error {
	if !dn.closing.CompareAndSwap(false, true) {
		return nil
	}
	dn.cancel()
	dn.mrs.wakeAll() // a FreeMR waiting for a peer stops waiting
	dn.mu.Lock()
	paths := dn.paths
	dn.mu.Unlock()
	for _, dp := range paths {
		dp.mu.Lock()
		if dp.timer != nil && dp.timer.Stop() {
			dn.wg.Done()
		}
		dp.timer = nil
		dp.mu.Unlock()
	}
	dn.wg.Wait()
	for dn.xmits.Load() > 0 {
		time.Sleep(50 * time.Microsecond)
	}
	dn.mu.Lock()
	eps := dn.eps
	dn.eps = nil // newEP refuses from now on
	dn.mu.Unlock()
	for e := range eps {
		e.retireRDMA()
	}
	dn.locals.clear()
	return dn.ia.Close(dat.CloseAbrupt)
}

var (
	_ xport.AckBySequence = (*datNode)(nil)
	_ xport.NodeTransport = (*datNode)(nil)
)
