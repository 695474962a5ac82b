package rdsoverdat

import (
	"encoding/binary"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// RDMA on the kernel backend. The host's RDS carries RDMA only over IB,
// and this backend never hands the kernel user memory to pin, so it maps
// nothing: the calls fail with the errno the kernel gives a socket whose
// transport has no RDMA (rds_tcp, loopback), in the kernel's order.
// RDS_FREE_MR carries no pointer and goes to the kernel itself.

// rdmaUnsupported is __rds_rdma_map's answer: ENOTCONN before bind,
// EOPNOTSUPP after.
func (k *kernelSocket) rdmaUnsupported() error {
	if !k.boundAddr().IsValid() {
		return eNOTCONN
	}
	return eOPNOTSUPP
}

// getMR maps nothing (see above).
func (k *kernelSocket) getMR([]byte, RDMAFlags) (Cookie, error) {
	if k.closed.Load() {
		return 0, errClosed
	}
	return 0, k.rdmaUnsupported()
}

// mrs is 0: the backend holds no mappings.
func (k *kernelSocket) mrs() int { return 0 }

// rdmaCmsgs answers a send's control messages as rds_sendmsg would:
// ENOTCONN before bind; EINVAL for unknown or conflicting ones and for an
// RDMADest (this socket has no mapping for it to name); EOPNOTSUPP
// otherwise.
func (k *kernelSocket) rdmaCmsgs(cm []ControlMessage) error {
	if !k.boundAddr().IsValid() {
		return eNOTCONN
	}
	r, err := parseRDMACmsgs(cm)
	if err != nil {
		return err
	}
	if r.hasDest {
		return eINVAL
	}
	return eOPNOTSUPP
}

// freeMR passes RDS_FREE_MR (struct rds_free_mr_args) to the kernel.
func (k *kernelSocket) freeMR(c Cookie, flags RDMAFlags) error {
	if k.closed.Load() {
		return errClosed
	}
	var b [16]byte
	binary.NativeEndian.PutUint64(b[0:], uint64(c))
	binary.NativeEndian.PutUint64(b[8:], uint64(flags))
	return k.control(func(fd int) error {
		return unix.SetsockoptString(fd, wire.SOL_RDS, wire.RDS_FREE_MR, string(b[:]))
	})
}
