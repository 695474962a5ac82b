package srq

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// SRQ is a shared receive queue (DAT_SRQ_HANDLE).
type SRQ core.SRQ

// Attr are what Create takes (DAT_SRQ_ATTR).
type Attr struct {
	// MaxRecvDTOs is the number of buffers that may be outstanding.
	MaxRecvDTOs int
	// MaxRecvIOV is the most segments a posted buffer has; 0 means 1.
	MaxRecvIOV int
	// LowWatermark arms the low watermark event; DAT says to pass
	// dat.SRQLWDefault (0) and use SetLW later.
	LowWatermark int
}

// Param is what Query reports (DAT_SRQ_PARAM).
type Param struct {
	IA           *ia.IA
	State        dat.SRQState
	PZ           *ia.PZ
	MaxRecvDTOs  int
	MaxRecvIOV   int
	LowWatermark int
	// Available are the buffers posted and not taken by any EP.
	Available int
	// Outstanding are the buffers posted, taken, or completed but not yet
	// dequeued from a recv EVD: the entries not free for new posts.
	Outstanding int
}

func (s *SRQ) c() *core.SRQ { return (*core.SRQ)(s) }

// Create creates an SRQ in pz (dat_srq_create).
func Create(i *ia.IA, pz *ia.PZ, attr Attr) (*SRQ, error) {
	c, err := core.CreateSRQ((*core.IA)(i), (*core.PZ)(pz), attr.MaxRecvDTOs, attr.MaxRecvIOV, attr.LowWatermark)
	if err != nil {
		return nil, err
	}
	s := (*SRQ)(c)
	c.SetHandle(s)
	c.Arm()
	return s, nil
}

// PostRecv posts a receive buffer that any EP of the SRQ may fill
// (dat_srq_post_recv); cookie comes back in its completion.
func (s *SRQ) PostRecv(iov []dat.LMRTriplet, cookie dat.DTOCookie) error {
	return s.c().PostRecv(iov, cookie)
}

// PostRecvList posts many receive buffers in one call, a godapl
// extension with no DAT counterpart: each entry is what one
// dat_srq_post_recv takes, checked and answered with that call's errors,
// and the buffers go to the provider in chunks of one post each (on
// rdmacore one ibv_post_srq_recv per chunk instead of one per buffer).
//
// Entries are posted in order. On a partial failure the buffers before
// the refused one stay posted and the rest are not: n is how many were
// posted (posts[:n]), and err is what PostRecv would have returned for
// posts[n]; a caller may fix or drop that entry and post posts[n+1:]
// again. An empty list posts nothing and returns 0, nil. It allocates
// nothing.
func (s *SRQ) PostRecvList(posts []dat.RecvPost) (n int, err error) {
	return s.c().PostRecvList(posts)
}

// Query reports the SRQ (dat_srq_query).
func (s *SRQ) Query() (Param, error) {
	p, err := s.c().Query()
	if err != nil {
		return Param{}, err
	}
	return Param{
		IA: (*ia.IA)(s.c().IA()), State: p.State, PZ: (*ia.PZ)(p.PZ), MaxRecvDTOs: p.MaxRecvDTOs,
		MaxRecvIOV: p.MaxRecvIOV, LowWatermark: p.LowWatermark, Available: p.Available, Outstanding: p.Outstanding,
	}, nil
}

// Resize sets max_recv_dtos (dat_srq_resize); never below the outstanding
// buffers or the low watermark.
func (s *SRQ) Resize(maxRecvDTOs int) error { return s.c().Resize(maxRecvDTOs) }

// SetLW sets the low watermark and arms its one-shot event
// (dat_srq_set_lw); see the package doc.
func (s *SRQ) SetLW(lw int) error { return s.c().SetLW(lw) }

// Free frees the SRQ (dat_srq_free); refused while EPs use it.
func (s *SRQ) Free() error { return s.c().Free() }

// HandleType implements dat.Handle.
func (s *SRQ) HandleType() dat.HandleType { return dat.HandleTypeSRQ }

// SetConsumerContext implements dat.Handle.
func (s *SRQ) SetConsumerContext(ctx any) error {
	if err := s.c().LiveSRQ("set_consumer_context"); err != nil {
		return err
	}
	return s.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (s *SRQ) ConsumerContext() (any, error) {
	if err := s.c().LiveSRQ("get_consumer_context"); err != nil {
		return nil, err
	}
	return s.c().ConsumerContext()
}

var _ dat.Handle = (*SRQ)(nil)
