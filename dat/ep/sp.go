package ep

import (
	"net/netip"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// PSP is a public service point (DAT_PSP_HANDLE): a persistent listener
// whose every connection request becomes a CR and a
// DAT_CONNECTION_REQUEST_EVENT on its EVD. The EVD's queue length is the
// backlog.
type PSP core.SP

// RSP is a reserved service point (DAT_RSP_HANDLE): a one-shot listener
// bound to one EP.
type RSP core.SP

// CR is a connection request (DAT_CR_HANDLE).
type CR core.CR

// SPParam is what PSP.Query and RSP.Query report.
type SPParam struct {
	IA       *ia.IA
	ConnQual dat.ConnQual
	EVD      *evd.EVD
	Flags    dat.PSPFlags
	EP       *EP // RSP only
}

// CRParam is what CR.Query reports (DAT_CR_PARAM).
type CRParam struct {
	RemoteAddr netip.AddrPort
	// PrivateData is the peer's request data, zero-padded to 56 bytes
	// over an IB or RoCE IA (the CM's field has no length).
	PrivateData []byte
	LocalEP     *EP // the RSP's or the provider-created EP
}

// CreatePSP listens on qual (dat_psp_create). With dat.PSPProvider the
// provider creates an EP for each request (in TENTATIVE_CONNECTION_PENDING,
// without PZ or EVDs: give it them with Modify before accepting).
func CreatePSP(i *ia.IA, qual dat.ConnQual, e *evd.EVD, flags dat.PSPFlags) (*PSP, error) {
	c, err := core.CreatePSP((*core.IA)(i), qual, false, (*core.EVD)(e), flags, handles)
	if err != nil {
		return nil, err
	}
	return (*PSP)(c), nil
}

// CreatePSPAny listens on a free qualifier the provider picks and returns
// it (dat_psp_create_any).
func CreatePSPAny(i *ia.IA, e *evd.EVD, flags dat.PSPFlags) (*PSP, dat.ConnQual, error) {
	c, err := core.CreatePSP((*core.IA)(i), 0, true, (*core.EVD)(e), flags, handles)
	if err != nil {
		return nil, 0, err
	}
	q, _ := c.Query()
	return (*PSP)(c), q.ConnQual, nil
}

func spParam(i *core.SP) (SPParam, error) {
	p, err := i.Query()
	if err != nil {
		return SPParam{}, err
	}
	var e *EP
	if p.EP != nil {
		e = (*EP)(p.EP)
	}
	return SPParam{ConnQual: p.ConnQual, EVD: (*evd.EVD)(p.EVD), Flags: p.Flags, EP: e}, nil
}

// Query reports the PSP (dat_psp_query).
func (p *PSP) Query() (SPParam, error) { return spParam((*core.SP)(p)) }

// Free stops listening (dat_psp_free); later requests are refused like
// requests to nobody, existing CRs and EPs are unaffected.
func (p *PSP) Free() error { return (*core.SP)(p).Free("psp_free") }

// HandleType implements dat.Handle.
func (p *PSP) HandleType() dat.HandleType { return dat.HandleTypePSP }

// SetConsumerContext implements dat.Handle.
func (p *PSP) SetConsumerContext(ctx any) error { return spSetCtx((*core.SP)(p), ctx) }

// ConsumerContext implements dat.Handle.
func (p *PSP) ConsumerContext() (any, error) { return spCtx((*core.SP)(p)) }

// CreateRSP listens on qual for one request to e, which moves to
// RESERVED (dat_rsp_create). The request moves e to
// PASSIVE_CONNECTION_PENDING and its event has a nil SP: the RSP is used
// up.
func CreateRSP(i *ia.IA, qual dat.ConnQual, e *EP, ev *evd.EVD) (*RSP, error) {
	c, err := core.CreateRSP((*core.IA)(i), qual, e.c(), (*core.EVD)(ev), handles)
	if err != nil {
		return nil, err
	}
	return (*RSP)(c), nil
}

// Query reports the RSP (dat_rsp_query).
func (r *RSP) Query() (SPParam, error) { return spParam((*core.SP)(r)) }

// Free stops listening and returns the EP to UNCONNECTED (dat_rsp_free).
func (r *RSP) Free() error { return (*core.SP)(r).Free("rsp_free") }

// HandleType implements dat.Handle.
func (r *RSP) HandleType() dat.HandleType { return dat.HandleTypeRSP }

// SetConsumerContext implements dat.Handle.
func (r *RSP) SetConsumerContext(ctx any) error { return spSetCtx((*core.SP)(r), ctx) }

// ConsumerContext implements dat.Handle.
func (r *RSP) ConsumerContext() (any, error) { return spCtx((*core.SP)(r)) }

func spSetCtx(c *core.SP, ctx any) error {
	if err := c.LiveSP("set_consumer_context"); err != nil {
		return err
	}
	return c.SetConsumerContext(ctx)
}

func spCtx(c *core.SP) (any, error) {
	if err := c.LiveSP("get_consumer_context"); err != nil {
		return nil, err
	}
	return c.ConsumerContext()
}

func (r *CR) c() *core.CR { return (*core.CR)(r) }

// Query reports the request (dat_cr_query): the peer's address and port
// and its private data.
func (r *CR) Query() (CRParam, error) {
	p, err := r.c().Query()
	if err != nil {
		return CRParam{}, err
	}
	var e *EP
	if p.LocalEP != nil {
		e = (*EP)(p.LocalEP)
	}
	return CRParam{RemoteAddr: p.RemoteAddr, PrivateData: p.PrivateData, LocalEP: e}, nil
}

// Accept accepts the request on e, or on the CR's own EP when e is nil
// (dat_cr_accept), sending privateData to the peer.
func (r *CR) Accept(e *EP, privateData []byte) error { return r.c().Accept(e.c(), privateData) }

// Reject refuses the request, sending privateData to the peer
// (dat_cr_reject).
func (r *CR) Reject(privateData []byte) error { return r.c().Reject(privateData) }

// Handoff passes the request to this IA's PSP on qual (dat_cr_handoff).
func (r *CR) Handoff(qual dat.ConnQual) error { return r.c().Handoff(qual) }

// HandleType implements dat.Handle.
func (r *CR) HandleType() dat.HandleType { return dat.HandleTypeCR }

// SetConsumerContext implements dat.Handle.
func (r *CR) SetConsumerContext(ctx any) error { return r.c().SetConsumerContext(ctx) }

// ConsumerContext implements dat.Handle.
func (r *CR) ConsumerContext() (any, error) { return r.c().ConsumerContext() }

var (
	_ dat.Handle = (*PSP)(nil)
	_ dat.Handle = (*RSP)(nil)
	_ dat.Handle = (*CR)(nil)
)
