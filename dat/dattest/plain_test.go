package dattest

import (
	"context"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestPlainQP runs the post tests over mem QPs (and SRQs) stripped of
// every optional interface of package verbs: no lent locks, no
// post-and-unlock, no SGL check DAT may rely on. That is the path DAT takes over a provider that
// has none of them (its own mutex around plain PostSend and PostRecv, its
// own checks of every triplet), which no built-in provider exercises.
func TestPlainQP(t *testing.T) {
	runPlain(t, plainProvider{qp: true}, []testGroup{{"PostChecks", postCheckTests}, {"DTO", dtoTests}})
}

// TestPlainCQ runs the EVD, DTO and RMR tests over mem CQs stripped of
// the optional CQLocker and CQMutexer: the path an EVD takes over a
// provider that lends no CQ lock (DAT's own mutex around plain Poll
// calls), which no built-in provider exercises.
func TestPlainCQ(t *testing.T) {
	if _, ok := verbs.CQ(plainCQ{}).(fastpath.CQLocker); ok {
		t.Fatal("plainCQ lends a lock")
	}
	runPlain(t, plainProvider{cq: true}, []testGroup{{"EVD", evdTests}, {"DTO", dtoTests}, {"RMR", rmrTests}})
}

type testGroup struct {
	name  string
	tests []testCase
}

// runPlain runs groups between two IAs of a fresh mem provider stripped
// as strip says.
func runPlain(t *testing.T, strip plainProvider, groups []testGroup) {
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					verbstest.CheckLeaks(t)
					prov := strip
					prov.Provider = mem.New()
					reg, err := dat.NewRegistry([]verbs.Provider{prov}, []dat.Entry{{Name: "plain", Provider: "plain", Device: mem.DeviceName, Addr: providers.MemAddr}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					a, err := ia.OpenIn(reg, "plain", 0)
					if err != nil {
						t.Fatal(err)
					}
					b, err := ia.OpenIn(reg, "plain", 0)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() {
						a.Close(dat.CloseAbrupt)
						b.Close(dat.CloseAbrupt)
					})
					tc.fn(t, &env{h: &Harness{NoListenerEvent: dat.ConnectionEventNonPeerRejected, Short: true}, a: a, b: b})
				})
			}
		})
	}
}

// plainQP is a verbs.QP and nothing else; plainCQ a verbs.CQ; plainSRQ a
// verbs.SRQ.
type (
	plainQP  struct{ verbs.QP }
	plainCQ  struct{ verbs.CQ }
	plainSRQ struct{ verbs.SRQ }
)

func unwrapQP(qp verbs.QP) verbs.QP {
	if p, ok := qp.(plainQP); ok {
		return p.QP
	}
	return qp
}

// plainProvider is mem handing out plain QPs and SRQs (qp) and/or plain
// CQs (cq).
// The rest of the wrappers carry them through to the provider, which
// wants its own back.
type (
	plainProvider struct {
		*mem.Provider
		qp, cq bool
	}
	plainDevice struct {
		verbs.Device
		strip plainProvider
	}
	plainPD struct {
		verbs.PD
		strip plainProvider
	}
	plainListener struct{ verbs.Listener }
	plainRequest  struct{ verbs.ConnRequest }
)

func (p plainProvider) Name() string { return "plain" }

func (p plainProvider) Open(name string) (verbs.Device, error) {
	d, err := p.Provider.Open(name)
	if err != nil {
		return nil, err
	}
	return plainDevice{d, p}, nil
}

func (d plainDevice) CreateCQ(attr verbs.CQAttr) (verbs.CQ, error) {
	cq, err := d.Device.CreateCQ(attr)
	if err != nil || !d.strip.cq {
		return cq, err
	}
	return plainCQ{cq}, nil
}

func (d plainDevice) AllocPD() (verbs.PD, error) {
	pd, err := d.Device.AllocPD()
	if err != nil {
		return nil, err
	}
	return plainPD{pd, d.strip}, nil
}

func (d plainDevice) Connect(ctx context.Context, qp verbs.QP, addr string, p verbs.ConnParam) (verbs.Conn, error) {
	return d.Device.Connect(ctx, unwrapQP(qp), addr, p)
}

func (d plainDevice) Listen(addr string, backlog int) (verbs.Listener, error) {
	l, err := d.Device.Listen(addr, backlog)
	if err != nil {
		return nil, err
	}
	return plainListener{l}, nil
}

func (pd plainPD) CreateSRQ(attr verbs.SRQAttr) (verbs.SRQ, error) {
	srq, err := pd.PD.CreateSRQ(attr)
	if err != nil || !pd.strip.qp {
		return srq, err
	}
	return plainSRQ{srq}, nil
}

func (pd plainPD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	if p, ok := attr.SRQ.(plainSRQ); ok {
		attr.SRQ = p.SRQ
	}
	for _, cq := range []*verbs.CQ{&attr.SendCQ, &attr.RecvCQ} {
		if p, ok := (*cq).(plainCQ); ok {
			*cq = p.CQ
		}
	}
	qp, err := pd.PD.CreateQP(attr)
	if err != nil || !pd.strip.qp {
		return qp, err
	}
	return plainQP{qp}, nil
}

func (l plainListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return plainRequest{r}, nil
}

func (r plainRequest) Accept(qp verbs.QP, p verbs.ConnParam) (verbs.Conn, error) {
	return r.ConnRequest.Accept(unwrapQP(qp), p)
}
