package ep

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/dat/srq"
)

// CreateWithSRQ creates an EP in UNCONNECTED whose receive buffers come
// from s (dat_ep_create_with_srq). attr must not be nil; its MaxRecvIOV is
// ignored. The EP must be in the SRQ's PZ and needs a recv EVD, where the
// buffers it takes complete; PostRecv on it fails with DAT_INVALID_STATE.
// The link to the SRQ lasts until Free.
func CreateWithSRQ(i *ia.IA, pz *ia.PZ, recv, req, conn *evd.EVD, s *srq.SRQ, attr *dat.EPAttr) (*EP, error) {
	c, err := core.CreateEPWithSRQ((*core.IA)(i), (*core.PZ)(pz), (*core.EVD)(recv), (*core.EVD)(req), (*core.EVD)(conn), (*core.SRQ)(s), attr)
	if err != nil {
		return nil, err
	}
	e := (*EP)(c)
	c.SetHandle(e)
	return e, nil
}

// SRQ returns the SRQ the EP was created with, or nil.
func (e *EP) SRQ() *srq.SRQ {
	if s := e.c().SRQ(); s != nil {
		return (*srq.SRQ)(s)
	}
	return nil
}

// RecvQuery reports the receive buffers allocated to the EP whose
// completions were not generated yet, and the span of them
// (dat_ep_recv_query). For an EP on an SRQ they count the buffers the EP
// took for messages still arriving, exact even while several EPs of the
// SRQ receive at once (the soft-iWARP and mem providers' QPs count them
// per QP). Over a provider without that count, both are
// dat.ValueUnknown while messages arrive on several EPs of the SRQ.
func (e *EP) RecvQuery() (nbufsAllocated, bufsAllocSpan int, err error) {
	return e.c().RecvQuery()
}

// SetWatermark sets the soft and hard high watermarks of the receive
// buffers the EP holds (dat_ep_set_watermark); dat.WatermarkInfinite
// disables one. Passing the soft one raises dat.AsyncEPSoftHighWatermark
// once on the IA's async EVD (re-armed by the next call); passing the hard
// one breaks the connection.
func (e *EP) SetWatermark(soft, hard int) error { return e.c().SetWatermark(soft, hard) }
