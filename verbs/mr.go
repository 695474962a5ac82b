package verbs

import (
	"os"
	"strings"
	"unsafe"
)

// Access is a set of rights granted to a memory registration or window.
// Local read is always granted.
type Access uint32

const (
	// AccessLocalWrite lets receives and RDMA Read responses be placed into
	// the memory. Remote write requires it.
	AccessLocalWrite Access = 1 << iota
	// AccessRemoteWrite lets the peer RDMA Write into the memory.
	AccessRemoteWrite
	// AccessRemoteRead lets the peer RDMA Read from the memory.
	AccessRemoteRead
	// AccessMWBind lets memory windows be bound to ranges of the MR.
	AccessMWBind
)

func (a Access) String() string {
	var parts []string
	if a&AccessLocalWrite != 0 {
		parts = append(parts, "LOCAL_WRITE")
	}
	if a&AccessRemoteWrite != 0 {
		parts = append(parts, "REMOTE_WRITE")
	}
	if a&AccessRemoteRead != 0 {
		parts = append(parts, "REMOTE_READ")
	}
	if a&AccessMWBind != 0 {
		parts = append(parts, "MW_BIND")
	}
	if len(parts) == 0 {
		return "LOCAL_READ"
	}
	return strings.Join(parts, "|")
}

// Valid reports whether the combination is allowed: remote write needs
// local write, as in libibverbs.
func (a Access) Valid() bool {
	if a&^(AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead|AccessMWBind) != 0 {
		return false
	}
	return a&AccessRemoteWrite == 0 || a&AccessLocalWrite != 0
}

// PD is a protection domain: MRs, MWs, QPs and SRQs created in one PD can
// be used only with each other.
type PD interface {
	// RegMR registers buf, which must stay referenced and unmoved until
	// Dereg. Go heap memory never moves, so any []byte works for software
	// providers; hardware providers want memory from AllocMem.
	RegMR(buf []byte, access Access) (MR, error)
	// RegMRAt registers buf as RegMR does, but with its first byte at
	// address iova of the MR's address space (ibv_reg_mr_iova2): SGEs
	// and the peer's RDMA requests name buf[i] as iova+i, and
	// nothing else. A peer that names memory by offset (a zero-based
	// region, as the kernel's fast registrations are) needs it. iova
	// must sit at buf's offset within a page (IOVAValid), which is what
	// the kernel's verbs require of every device; ErrInvalidArgument
	// otherwise.
	RegMRAt(buf []byte, iova uint64, access Access) (MR, error)
	// AllocMW allocates an unbound memory window.
	AllocMW() (MW, error)
	// CreateQP creates a reliable-connected queue pair in state RESET.
	CreateQP(attr QPInitAttr) (QP, error)
	// CreateSRQ creates a shared receive queue.
	CreateSRQ(attr SRQAttr) (SRQ, error)
	// Dealloc frees the PD; it fails with ErrInUse while objects remain.
	Dealloc() error
}

// MR is a memory registration. Its keys are STags: a 24-bit index and an
// 8-bit key chosen at random, so a peer cannot guess a valid rkey from
// another. For the providers of godapl lkey and rkey are the same STag.
type MR interface {
	LKey() uint32
	RKey() uint32
	// Addr is the address of the first byte in the MR's address space: SGEs
	// and the peer's RDMA requests name bytes of the MR as Addr()+offset.
	Addr() uint64
	// Bytes returns the registered memory.
	Bytes() []byte
	Access() Access
	PD() PD
	// Invalidate makes the STag invalid for every further access, local or
	// remote, as a Send with Invalidate from the peer would. The MR stays
	// registered until Dereg.
	Invalidate() error
	// Dereg deregisters the MR. It fails with ErrInUse while memory windows
	// are bound to it.
	Dereg() error
}

// MW is a memory window: an rkey granting a peer access to a sub-range of
// an MR with a subset of its rights. It is bound and rebound with OpBindMW
// and dies with OpLocalInv, a peer's Send with Invalidate, or Dealloc.
type MW interface {
	// RKey is the key of the current binding (0 while unbound). Every bind
	// picks a fresh key, so a peer holding an old key loses access.
	RKey() uint32
	PD() PD
	Dealloc() error
}

// AddrOf returns the address of b's first byte, the value MR.Addr returns
// for an MR that registers b. It is how callers build SGEs and advertise
// buffers to peers.
func AddrOf(b []byte) uint64 {
	if cap(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// IOVAValid reports whether buf may be registered at iova (PD.RegMRAt):
// iova has buf's offset within a page, and the range does not wrap.
func IOVAValid(buf []byte, iova uint64) bool {
	page := uint64(os.Getpagesize())
	return iova%page == AddrOf(buf)%page && iova+uint64(len(buf)) >= iova
}

// ZeroBased returns the address of buf's first byte in a region that
// starts at 0 at the beginning of buf's first page: the iova with which
// PD.RegMRAt registers buf the way the kernel's fast registrations map
// memory, addressed by offset from that page.
func ZeroBased(buf []byte) uint64 { return AddrOf(buf) % uint64(os.Getpagesize()) }

// SGEOf returns the SGE naming n bytes at offset off of mr.
func SGEOf(mr MR, off, n int) SGE {
	return SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}
}
