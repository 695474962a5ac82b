package core

import (
	"context"
	"errors"
	"sync"

	"github.com/godapl/godapl/dat"
)

// CNO is a consumer notification object: one place to wait for any of
// several EVDs. It is triggered by an event on an attached EVD that is
// enabled and not owned by a waiter of its own.
type CNO struct {
	Object
	ia *IA

	mu    sync.Mutex
	evds  []*EVD // guarded by mu
	hint  *EVD   // last EVD that triggered; guarded by mu
	wake  chan struct{}
	agent any // the proxy agent (cno_modify_agent); opaque here; guarded by mu
}

// CreateCNO creates a CNO (cno_create).
func CreateCNO(ia *IA, agent any) (*CNO, error) {
	const op = "cno_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	c := &CNO{ia: ia, wake: make(chan struct{}, 1), agent: agent}
	c.init(dat.HandleTypeCNO)
	if err := ia.adopt(op, &c.Object, rankCNO, c.destroy); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *CNO) live(op string) error {
	if c == nil {
		return InvalidHandle(op, dat.HandleTypeCNO)
	}
	return c.Live(op)
}

// LiveCNO returns DAT_INVALID_HANDLE for a nil or freed CNO.
func (c *CNO) LiveCNO(op string) error { return c.live(op) }

func (c *CNO) attach(e *EVD) {
	c.mu.Lock()
	c.evds = append(c.evds, e)
	c.mu.Unlock()
}

func (c *CNO) detach(e *EVD) {
	c.mu.Lock()
	for i, x := range c.evds {
		if x == e {
			c.evds = append(c.evds[:i], c.evds[i+1:]...)
			break
		}
	}
	if c.hint == e {
		c.hint = nil
	}
	c.mu.Unlock()
	c.kick()
}

func (c *CNO) trigger(e *EVD) {
	c.mu.Lock()
	c.hint = e
	c.mu.Unlock()
	c.kick()
}

func (c *CNO) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Trigger wakes a waiter with no EVD (cno_trigger).
func (c *CNO) Trigger() error {
	if err := c.live("cno_trigger"); err != nil {
		return err
	}
	c.kick()
	return nil
}

// Wait blocks until an attached EVD may be dequeued and returns it as a
// hint (cno_wait). A timeout returns DAT_QUEUE_EMPTY, as the reference
// does; a trigger without an EVD, or an IA closed under the waiter,
// returns a nil EVD and no error.
func (c *CNO) Wait(ctx context.Context) (*EVD, error) {
	const op = "cno_wait"
	if err := c.live(op); err != nil {
		return nil, err
	}
	first := true
	for {
		c.mu.Lock()
		evds := append([]*EVD(nil), c.evds...)
		c.mu.Unlock()
		for _, e := range evds {
			if e.ready() {
				return e, nil
			}
		}
		if c.freed.Load() {
			return nil, nil
		}
		if !first && len(evds) == 0 {
			return nil, nil // woken by Trigger, or every EVD went away
		}
		for _, e := range evds {
			e.armWatch()
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, dat.Wrap(op, dat.QueueEmpty, dat.NoSubtype, ctx.Err())
			}
			return nil, dat.Wrap(op, dat.InterruptedCall, dat.SubInterrupted, ctx.Err())
		}
		first = false
	}
}

// ModifyAgent replaces the proxy agent (cno_modify_agent).
func (c *CNO) ModifyAgent(agent any) error {
	if err := c.live("cno_modify_agent"); err != nil {
		return err
	}
	c.mu.Lock()
	c.agent = agent
	c.mu.Unlock()
	return nil
}

// Agent returns the proxy agent (cno_query).
func (c *CNO) Agent() (any, error) {
	if err := c.live("cno_query"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.agent, nil
}

// IA returns the CNO's IA.
func (c *CNO) IA() *IA { return c.ia }

// Free frees the CNO (cno_free): DAT_INVALID_STATE / CNO_IN_USE while
// EVDs are attached.
func (c *CNO) Free() error {
	const op = "cno_free"
	if err := c.live(op); err != nil {
		return err
	}
	c.mu.Lock()
	inUse := len(c.evds) > 0
	c.mu.Unlock()
	if inUse {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateCNOInUse)
	}
	c.ia.release(&c.Object)
	c.destroy()
	return nil
}

func (c *CNO) destroy() {
	c.freed.Store(true)
	c.kick()
}
