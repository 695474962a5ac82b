package lmr

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/verbs"
)

// LMR is a local memory region (DAT_LMR_HANDLE).
type LMR core.LMR

// Param is what Query reports (DAT_LMR_PARAM).
type Param struct {
	IA                *ia.IA
	MemType           dat.MemType
	Length            uint64
	PZ                *ia.PZ
	Privileges        dat.MemPriv
	VAType            dat.VAType
	LMRContext        dat.LMRContext
	RMRContext        dat.RMRContext
	RegisteredSize    uint64
	RegisteredAddress dat.VAddr
}

func (l *LMR) c() *core.LMR { return (*core.LMR)(l) }

func wrap(c *core.LMR, err error) (*LMR, error) {
	if err != nil {
		return nil, err
	}
	l := (*LMR)(c)
	c.SetHandle(l)
	return l, nil
}

// Create registers buf in pz with privileges priv (dat_lmr_create with
// DAT_MEM_TYPE_VIRTUAL). buf must stay referenced until Free. Its
// registered address (Addr), by which local triplets and peers name
// buf[0], depends on va: with dat.VATypeVA it is buf's virtual address;
// with dat.VATypeZB the region is zero-based at the start of buf's
// first page, so buf[0] is at its offset in that page (below the page
// size), the layout of the Linux kernel's fast registrations, which a
// kernel peer addresses by offset.
func Create(i *ia.IA, pz *ia.PZ, buf []byte, priv dat.MemPriv, va dat.VAType) (*LMR, error) {
	return wrap(core.CreateLMR((*core.IA)(i), (*core.PZ)(pz), buf, nil, dat.MemTypeVirtual, priv, va))
}

// Alloc allocates size bytes of page-aligned memory outside the Go heap
// and registers it; the memory is unmapped by Free.
func Alloc(i *ia.IA, pz *ia.PZ, size int, priv dat.MemPriv) (*LMR, error) {
	if size <= 0 {
		return nil, dat.NewError("lmr_create", dat.InvalidParameter, dat.InvalidArg4)
	}
	m, err := verbs.AllocMem(size)
	if err != nil {
		return nil, dat.Wrap("lmr_create", dat.InsufficientResources, dat.ResourceMemory, err)
	}
	l, err := wrap(core.CreateLMR((*core.IA)(i), (*core.PZ)(pz), m.Bytes(), m, dat.MemTypeVirtual, priv, dat.VATypeVA))
	if err != nil {
		m.Free()
	}
	return l, err
}

// CreateFromLMR registers the memory of another LMR again, in pz with
// privileges priv (dat_lmr_create with DAT_MEM_TYPE_LMR).
func CreateFromLMR(i *ia.IA, pz *ia.PZ, from *LMR, priv dat.MemPriv) (*LMR, error) {
	if err := from.c().LiveLMR("lmr_create"); err != nil {
		return nil, err
	}
	return wrap(core.CreateLMR((*core.IA)(i), (*core.PZ)(pz), from.c().Bytes(), nil, dat.MemTypeLMR, priv, dat.VATypeVA))
}

// Bytes returns the registered memory.
func (l *LMR) Bytes() []byte { return l.c().Bytes() }

// Context returns the lmr_context, the key local triplets use.
func (l *LMR) Context() dat.LMRContext { return l.c().Context() }

// RMRContext returns the rmr_context a peer uses (0 without remote
// privileges).
func (l *LMR) RMRContext() dat.RMRContext { return l.c().RMRContext() }

// Addr returns the address of the first byte, as triplets name it.
func (l *LMR) Addr() dat.VAddr { return l.c().Addr() }

// Triplet names n bytes at offset off for a local IOV.
func (l *LMR) Triplet(off, n int) dat.LMRTriplet {
	return dat.LMRTriplet{VirtualAddress: l.Addr() + dat.VAddr(off), SegmentLength: uint32(n), LMRContext: l.Context()}
}

// RMRTriplet names n bytes at offset off for a peer.
func (l *LMR) RMRTriplet(off, n int) dat.RMRTriplet {
	return dat.RMRTriplet{VirtualAddress: l.Addr() + dat.VAddr(off), SegmentLength: uint32(n), RMRContext: l.RMRContext()}
}

// Query reports the LMR (dat_lmr_query).
func (l *LMR) Query() (Param, error) {
	p, err := l.c().Query()
	if err != nil {
		return Param{}, err
	}
	return Param{
		IA: (*ia.IA)(l.c().PZ().IA()), MemType: p.MemType, Length: p.Length, PZ: (*ia.PZ)(p.PZ),
		Privileges: p.Privileges, VAType: p.VAType, LMRContext: p.LMRContext, RMRContext: p.RMRContext,
		RegisteredSize: p.RegisteredSize, RegisteredAddress: p.RegisteredAddress,
	}, nil
}

// Free deregisters the LMR (dat_lmr_free); DAT_INVALID_STATE /
// LMR_IN_USE while an RMR is bound to it.
func (l *LMR) Free() error { return l.c().Free() }

// HandleType implements dat.Handle.
func (l *LMR) HandleType() dat.HandleType { return dat.HandleTypeLMR }

// SetConsumerContext implements dat.Handle.
func (l *LMR) SetConsumerContext(ctx any) error {
	if err := l.c().LiveLMR("set_consumer_context"); err != nil {
		return err
	}
	return l.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (l *LMR) ConsumerContext() (any, error) {
	if err := l.c().LiveLMR("get_consumer_context"); err != nil {
		return nil, err
	}
	return l.c().ConsumerContext()
}

// SyncRDMARead makes memory written by RDMA Reads visible to the CPU
// (dat_lmr_sync_rdma_read). Software providers keep memory coherent, so it
// only checks that every triplet names memory of a live LMR.
func SyncRDMARead(i *ia.IA, iov []dat.LMRTriplet) error {
	return (*core.IA)(i).SyncCheck("lmr_sync_rdma_read", iov)
}

// SyncRDMAWrite makes memory written by the CPU visible to RDMA Writes
// (dat_lmr_sync_rdma_write); see SyncRDMARead.
func SyncRDMAWrite(i *ia.IA, iov []dat.LMRTriplet) error {
	return (*core.IA)(i).SyncCheck("lmr_sync_rdma_write", iov)
}

var _ dat.Handle = (*LMR)(nil)
