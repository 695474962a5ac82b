package dattest

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestPlainCQ runs the EVD, DTO and RMR tests over mem CQs stripped of
// the optional CQLocker and CQMutexer: the path an EVD takes over a
// provider that lends no CQ lock (DAT's own mutex around plain Poll
// calls), which no built-in provider exercises.
func TestPlainCQ(t *testing.T) {
	if _, ok := verbs.CQ(plainCQ{}).(verbs.CQLocker); ok {
		t.Fatal("plainCQ lends a lock")
	}
	for _, g := range []struct {
		name  string
		tests []testCase
	}{{"EVD", evdTests}, {"DTO", dtoTests}, {"RMR", rmrTests}} {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					verbstest.CheckLeaks(t)
					reg, err := dat.NewRegistry([]verbs.Provider{plainCQProvider{mem.New()}},
						[]dat.Entry{{Name: "plaincq", Provider: "plaincq", Device: mem.DeviceName, Addr: providers.MemAddr}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					a, err := ia.OpenIn(reg, "plaincq", 0)
					if err != nil {
						t.Fatal(err)
					}
					b, err := ia.OpenIn(reg, "plaincq", 0)
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

// plainCQ is a verbs.CQ and nothing else.
type plainCQ struct{ verbs.CQ }

// The device hands out plainCQs, and its PDs give the provider its own
// CQs back when they create a QP.
type (
	plainCQProvider struct{ *mem.Provider }
	plainCQDevice   struct{ verbs.Device }
	plainCQPD       struct{ verbs.PD }
)

func (p plainCQProvider) Name() string { return "plaincq" }

func (p plainCQProvider) Open(name string) (verbs.Device, error) {
	d, err := p.Provider.Open(name)
	if err != nil {
		return nil, err
	}
	return plainCQDevice{d}, nil
}

func (d plainCQDevice) CreateCQ(attr verbs.CQAttr) (verbs.CQ, error) {
	cq, err := d.Device.CreateCQ(attr)
	if err != nil {
		return nil, err
	}
	return plainCQ{cq}, nil
}

func (d plainCQDevice) AllocPD() (verbs.PD, error) {
	pd, err := d.Device.AllocPD()
	if err != nil {
		return nil, err
	}
	return plainCQPD{pd}, nil
}

func (pd plainCQPD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	for _, cq := range []*verbs.CQ{&attr.SendCQ, &attr.RecvCQ} {
		if p, ok := (*cq).(plainCQ); ok {
			*cq = p.CQ
		}
	}
	return pd.PD.CreateQP(attr)
}
