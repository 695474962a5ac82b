package ia

import (
	"net/netip"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/dat/providers"
)

// IA is an open interface adapter (DAT_IA_HANDLE).
type IA core.IA

// PZ is a protection zone (DAT_PZ_HANDLE): EPs, LMRs and RMRs of one PZ
// can be used only with each other.
type PZ core.PZ

func (i *IA) c() *core.IA { return (*core.IA)(i) }

// Open opens the IA named name in the default registry (dat_ia_open) with
// an async EVD of the default length. Unknown names fail with
// DAT_PROVIDER_NOT_FOUND, an interface without an IPv4 address with
// DAT_INVALID_ADDRESS.
func Open(name string) (*IA, error) {
	reg, err := providers.Default()
	if err != nil && reg == nil {
		return nil, dat.Wrap("ia_open", dat.ProviderNotFound, dat.NoSubtype, err)
	}
	return OpenIn(reg, name, 0)
}

// OpenIn opens the IA named name in registry r, with an async EVD of at
// least asyncQLen events (0: a default).
func OpenIn(r *dat.Registry, name string, asyncQLen int) (*IA, error) {
	if r == nil {
		return nil, dat.NewError("ia_open", dat.InvalidParameter, dat.InvalidArg1)
	}
	if asyncQLen < 0 {
		return nil, dat.NewError("ia_open", dat.InvalidParameter, dat.InvalidArg2)
	}
	entry, dev, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	c, err := core.OpenIA(entry, dev, asyncQLen)
	if err != nil {
		return nil, err
	}
	i := (*IA)(c)
	c.SetHandle(i)
	return i, nil
}

// Close closes the IA (dat_ia_close).
func (i *IA) Close(flags dat.CloseFlags) error { return i.c().Close(flags) }

// Query returns the IA's and the provider's attributes (dat_ia_query).
func (i *IA) Query() (dat.IAAttr, dat.ProviderAttr, error) { return i.c().Query() }

// Name returns the IA name the IA was opened with.
func (i *IA) Name() string { return i.c().Entry().Name }

// Addr returns the IA address, the one peers connect to.
func (i *IA) Addr() netip.Addr { return i.c().Entry().Addr }

// HandleType implements dat.Handle.
func (i *IA) HandleType() dat.HandleType { return dat.HandleTypeIA }

// SetConsumerContext implements dat.Handle.
func (i *IA) SetConsumerContext(ctx any) error {
	if err := i.c().LiveIA("set_consumer_context"); err != nil {
		return err
	}
	return i.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (i *IA) ConsumerContext() (any, error) {
	if err := i.c().LiveIA("get_consumer_context"); err != nil {
		return nil, err
	}
	return i.c().ConsumerContext()
}

// CreatePZ creates a protection zone (dat_pz_create).
func (i *IA) CreatePZ() (*PZ, error) {
	c, err := core.CreatePZ(i.c())
	if err != nil {
		return nil, err
	}
	pz := (*PZ)(c)
	c.SetHandle(pz)
	return pz, nil
}

func (pz *PZ) c() *core.PZ { return (*core.PZ)(pz) }

// Query returns the PZ's IA (dat_pz_query).
func (pz *PZ) Query() (*IA, error) {
	if err := pz.c().LivePZ("pz_query"); err != nil {
		return nil, err
	}
	return (*IA)(pz.c().IA()), nil
}

// Free frees the PZ (dat_pz_free); DAT_INVALID_STATE / PZ_IN_USE while an
// EP, LMR or RMR uses it.
func (pz *PZ) Free() error { return pz.c().Free() }

// HandleType implements dat.Handle.
func (pz *PZ) HandleType() dat.HandleType { return dat.HandleTypePZ }

// SetConsumerContext implements dat.Handle.
func (pz *PZ) SetConsumerContext(ctx any) error {
	if err := pz.c().LivePZ("set_consumer_context"); err != nil {
		return err
	}
	return pz.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (pz *PZ) ConsumerContext() (any, error) {
	if err := pz.c().LivePZ("get_consumer_context"); err != nil {
		return nil, err
	}
	return pz.c().ConsumerContext()
}

var (
	_ dat.Handle = (*IA)(nil)
	_ dat.Handle = (*PZ)(nil)
)
