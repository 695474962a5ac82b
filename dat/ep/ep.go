package ep

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// EP is an endpoint (DAT_EP_HANDLE).
type EP core.EP

// Param is what Query reports (DAT_EP_PARAM).
type Param struct {
	IA         *ia.IA
	State      dat.EPState
	Local      netip.AddrPort // local address and port qualifier
	Remote     netip.AddrPort // remote address and connection qualifier
	PZ         *ia.PZ
	RecvEVD    *evd.EVD
	RequestEVD *evd.EVD
	ConnectEVD *evd.EVD
	Attr       dat.EPAttr
}

func (e *EP) c() *core.EP { return (*core.EP)(e) }

var handles = core.HandleMaker{
	CR: func(c *core.CR) dat.Handle { return (*CR)(c) },
	EP: func(c *core.EP) dat.Handle { return (*EP)(c) },
	SP: func(c *core.SP) dat.Handle {
		if c.HandleType() == dat.HandleTypeRSP {
			return (*RSP)(c)
		}
		return (*PSP)(c)
	},
}

// Create creates an EP in UNCONNECTED (dat_ep_create). Receive
// completions go to recv, Send/RDMA/bind completions to req, connection
// events to conn; a nil EVD means "not interested" (and the matching
// posts fail). attr nil or zero fields take the provider's defaults.
func Create(i *ia.IA, pz *ia.PZ, recv, req, conn *evd.EVD, attr *dat.EPAttr) (*EP, error) {
	c, err := core.CreateEP((*core.IA)(i), (*core.PZ)(pz), (*core.EVD)(recv), (*core.EVD)(req), (*core.EVD)(conn), attr)
	if err != nil {
		return nil, err
	}
	e := (*EP)(c)
	c.SetHandle(e)
	return e, nil
}

// Connect starts connecting to the service point on qual at addr
// (dat_ep_connect) and returns at once; the outcome arrives on the connect
// EVD. timeout <= 0 waits forever (DAT_TIMEOUT_INFINITE). privateData
// reaches the peer's CR.
func (e *EP) Connect(addr netip.Addr, qual dat.ConnQual, timeout time.Duration, privateData []byte, qos dat.QoS, flags dat.ConnectFlags) error {
	return e.c().Connect("ep_connect", core.ConnectParam{Addr: addr, ConnQual: qual, Timeout: timeout, PrivateData: privateData, QoS: qos, Flags: flags})
}

// DupConnect connects to the same remote address and qualifier as dup
// (dat_ep_dup_connect).
func (e *EP) DupConnect(dup *EP, timeout time.Duration, privateData []byte, qos dat.QoS) error {
	return e.c().DupConnect(dup.c(), timeout, privateData, qos)
}

// Disconnect ends the connection, or aborts its setup (dat_ep_disconnect).
func (e *EP) Disconnect(flags dat.CloseFlags) error { return e.c().Disconnect(flags) }

// Reset returns a DISCONNECTED EP to UNCONNECTED (dat_ep_reset).
func (e *EP) Reset() error { return e.c().Reset() }

// Free frees the EP (dat_ep_free).
func (e *EP) Free() error { return e.c().Free() }

// Query reports the EP (dat_ep_query).
func (e *EP) Query() (Param, error) {
	p, err := e.c().Query()
	if err != nil {
		return Param{}, err
	}
	return Param{
		IA: (*ia.IA)(e.c().IA()), State: p.State, Local: p.Local, Remote: p.Remote, PZ: (*ia.PZ)(p.PZ),
		RecvEVD: (*evd.EVD)(p.RecvEVD), RequestEVD: (*evd.EVD)(p.RequestEVD), ConnectEVD: (*evd.EVD)(p.ConnectEVD), Attr: p.Attr,
	}, nil
}

// Modify replaces the EP's PZ, EVDs and attributes (dat_ep_modify) in the
// states DAT allows; the EP's queues must be idle.
func (e *EP) Modify(pz *ia.PZ, recv, req, conn *evd.EVD, attr *dat.EPAttr) error {
	return e.c().Modify((*core.PZ)(pz), (*core.EVD)(recv), (*core.EVD)(req), (*core.EVD)(conn), attr)
}

// Status reports the state and whether each direction is idle
// (dat_ep_get_status).
func (e *EP) Status() (state dat.EPState, recvIdle, requestIdle bool, err error) {
	return e.c().Status()
}

// State returns the EP's state (a Status without the rest).
func (e *EP) State() dat.EPState { return e.c().State() }

// PeerPrivateData returns the private data of the peer: its accept data
// on the active side, its request data on the passive side, zero-padded
// over an IB or RoCE IA (dat.ConnectionData). Valid until Free or Reset.
func (e *EP) PeerPrivateData() []byte { return e.c().PeerPrivateData() }

// PostSend posts a Send of the gathered segments (dat_ep_post_send).
func (e *EP) PostSend(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	return e.c().PostDTO(dat.DTOSend, iov, cookie, nil, flags)
}

// PostSendList posts the Sends of posts in order, as that many calls of
// PostSend would, handing them to the provider together, up to 32 in one
// work request list (a godapl extension of dat_ep_post_send): on
// rdmacore one ibv_post_send, one doorbell, for the list. It returns how
// many were posted: posts[:n] are on the send queue, posts[n:] are not,
// and err is what PostSend would have returned for posts[n] (nil when n
// == len(posts)). It allocates nothing after the EP's first list.
func (e *EP) PostSendList(posts []dat.SendPost) (n int, err error) {
	return e.c().PostSendList(posts)
}

// PostSendWithInvalidate posts a Send that also invalidates the peer's
// rmrContext once the message is placed (dat_ep_post_send_with_invalidate).
func (e *EP) PostSendWithInvalidate(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags, rmrContext dat.RMRContext) error {
	return e.c().Post(&core.Request{DOp: dat.DTOSend, IOV: iov, Cookie: cookie, Flags: flags, Inv: rmrContext, HasInv: true})
}

// PostRecv posts a receive scattered over the segments, front to back
// (dat_ep_post_recv).
func (e *EP) PostRecv(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	return e.c().PostRecv(iov, cookie, flags)
}

// PostRDMARead reads the peer memory remote into the segments
// (dat_ep_post_rdma_read).
func (e *EP) PostRDMARead(iov []dat.LMRTriplet, cookie dat.DTOCookie, remote dat.RMRTriplet, flags dat.CompletionFlags) error {
	return e.c().PostDTO(dat.DTORDMARead, iov, cookie, &remote, flags)
}

// PostRDMAWrite writes the segments to the peer memory remote
// (dat_ep_post_rdma_write).
func (e *EP) PostRDMAWrite(iov []dat.LMRTriplet, cookie dat.DTOCookie, remote dat.RMRTriplet, flags dat.CompletionFlags) error {
	return e.c().PostDTO(dat.DTORDMAWrite, iov, cookie, &remote, flags)
}

// PostRDMAReadToRMR reads the peer memory remote into the local memory a
// bound RMR names (dat_ep_post_rdma_read_to_rmr). The RMR must allow
// remote write: on iWARP the sink of a Read is written through an STag.
func (e *EP) PostRDMAReadToRMR(local dat.RMRTriplet, cookie dat.DTOCookie, remote dat.RMRTriplet, flags dat.CompletionFlags) error {
	return e.c().Post(&core.Request{DOp: dat.DTORDMARead, Cookie: cookie, Flags: flags, Remote: &remote, Sink: &local})
}

// HandleType implements dat.Handle.
func (e *EP) HandleType() dat.HandleType { return dat.HandleTypeEP }

// SetConsumerContext implements dat.Handle.
func (e *EP) SetConsumerContext(ctx any) error {
	if err := e.c().LiveEP("set_consumer_context"); err != nil {
		return err
	}
	return e.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (e *EP) ConsumerContext() (any, error) {
	if err := e.c().LiveEP("get_consumer_context"); err != nil {
		return nil, err
	}
	return e.c().ConsumerContext()
}

var _ dat.Handle = (*EP)(nil)
