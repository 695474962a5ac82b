package evd

import (
	"context"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// CNO is a consumer notification object (DAT_CNO_HANDLE).
type CNO core.CNO

func (c *CNO) c() *core.CNO { return (*core.CNO)(c) }

// CreateCNO creates a CNO (dat_cno_create). agent is the proxy agent,
// opaque to the provider and reported by Query.
func CreateCNO(i *ia.IA, agent any) (*CNO, error) {
	c, err := core.CreateCNO((*core.IA)(i), agent)
	if err != nil {
		return nil, err
	}
	cno := (*CNO)(c)
	c.SetHandle(cno)
	return cno, nil
}

// Wait blocks until an enabled EVD attached to the CNO, not owned by a
// waiter of its own, has an event, and returns it as a hint (dat_cno_wait).
// ctx's deadline gives DAT_QUEUE_EMPTY, as the reference does. Trigger, or
// the last EVD going away, returns a nil EVD.
func (c *CNO) Wait(ctx context.Context) (*EVD, error) {
	e, err := c.c().Wait(ctx)
	if err != nil || e == nil {
		return nil, err
	}
	return (*EVD)(e), nil
}

// Trigger wakes a waiter with a nil EVD (dat_cno_trigger).
func (c *CNO) Trigger() error { return c.c().Trigger() }

// ModifyAgent replaces the proxy agent (dat_cno_modify_agent).
func (c *CNO) ModifyAgent(agent any) error { return c.c().ModifyAgent(agent) }

// Query returns the CNO's IA and proxy agent (dat_cno_query).
func (c *CNO) Query() (*ia.IA, any, error) {
	a, err := c.c().Agent()
	if err != nil {
		return nil, nil, err
	}
	return (*ia.IA)(c.c().IA()), a, nil
}

// Free frees the CNO (dat_cno_free): DAT_INVALID_STATE / CNO_IN_USE while
// EVDs are attached.
func (c *CNO) Free() error { return c.c().Free() }

// HandleType implements dat.Handle.
func (c *CNO) HandleType() dat.HandleType { return dat.HandleTypeCNO }

// SetConsumerContext implements dat.Handle.
func (c *CNO) SetConsumerContext(ctx any) error {
	if err := c.c().LiveCNO("set_consumer_context"); err != nil {
		return err
	}
	return c.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (c *CNO) ConsumerContext() (any, error) {
	if err := c.c().LiveCNO("get_consumer_context"); err != nil {
		return nil, err
	}
	return c.c().ConsumerContext()
}

var _ dat.Handle = (*CNO)(nil)
