package evd

import (
	"context"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// EVD is an event dispatcher (DAT_EVD_HANDLE).
type EVD core.EVD

// Param is what Query reports (DAT_EVD_PARAM).
type Param struct {
	IA    *ia.IA
	QLen  int
	State dat.EVDState
	CNO   *CNO
	Flags dat.EVDFlags
}

func (e *EVD) c() *core.EVD { return (*core.EVD)(e) }

// handle is an EVD's public handle, which its events carry.
func handle(c *core.EVD) dat.Handle { return (*EVD)(c) }

// Create creates an EVD of at least qlen events accepting the streams in
// flags, attached to cno if it is not nil (dat_evd_create).
func Create(i *ia.IA, qlen int, cno *CNO, flags dat.EVDFlags) (*EVD, error) {
	c, err := core.CreateEVD((*core.IA)(i), qlen, (*core.CNO)(cno), flags)
	if err != nil {
		return nil, err
	}
	e := (*EVD)(c)
	c.SetHandle(e)
	return e, nil
}

// Async returns the IA's async EVD, the one ia.Open created
// (dat_ia_query's async_evd_handle).
func Async(i *ia.IA) *EVD {
	return (*EVD)((*core.IA)(i).AsyncEVD(handle))
}

// Dequeue removes the oldest event (dat_evd_dequeue). An empty EVD
// returns an error matching dat.ErrQueueEmpty; a waiter owning the EVD
// makes it DAT_INVALID_STATE. Dequeue never allocates.
func (e *EVD) Dequeue() (ev dat.Event, err error) {
	err = e.c().Dequeue(&ev)
	return ev, err
}

// Wait blocks until at least threshold events are queued, then removes
// the oldest and returns it with the number still queued (dat_evd_wait).
// ctx stands for DAT's timeout: its deadline ends the wait with
// DAT_TIMEOUT_EXPIRED, its cancellation with DAT_INTERRUPTED_CALL.
// Freeing the EVD or closing the IA under the waiter gives DAT_ABORT.
func (e *EVD) Wait(ctx context.Context, threshold int) (ev dat.Event, n int, err error) {
	// The event is written in place, into the result.
	n, err = e.c().Wait(ctx, threshold, &ev)
	return ev, n, err
}

// DequeueInto is Dequeue writing the event into *ev, as dat_evd_dequeue
// writes the caller's DAT_EVENT: a hot loop that keeps one Event saves the
// copy of a 256-byte result, and the clearing of one. Like C's DAT_EVENT,
// whose data is a union, *ev is written as far as the event needs: EVD,
// Number, and every field of the member Number names (DTO for a DTO
// completion, RMRBind for an RMR bind, ...); the other members may keep
// what they held, so read only the member Number names. On error *ev is
// left alone.
func (e *EVD) DequeueInto(ev *dat.Event) error {
	_, err := e.c().Take(nil, 1, ev, core.TakeDequeue)
	return err
}

// WaitInto is Wait writing the event into *ev, as dat_evd_wait writes the
// caller's DAT_EVENT; it returns the number of events still queued. *ev
// is written as DequeueInto writes it: read only the member Number names.
// On error *ev is left alone.
func (e *EVD) WaitInto(ctx context.Context, threshold int, ev *dat.Event) (int, error) {
	return e.c().Take(ctx, threshold, ev, core.TakeWait)
}

// PostSE queues a software event carrying data (dat_evd_post_se). The EVD
// must accept software events; a full EVD gives DAT_QUEUE_FULL.
func (e *EVD) PostSE(data any) error { return e.c().PostSE(data) }

// Query reports the EVD (dat_evd_query).
func (e *EVD) Query() (Param, error) {
	p, err := e.c().Query()
	if err != nil {
		return Param{}, err
	}
	return Param{IA: (*ia.IA)(e.c().IA()), QLen: p.QLen, State: p.State, CNO: (*CNO)(p.CNO), Flags: p.Flags}, nil
}

// Resize changes the queue length (dat_evd_resize).
func (e *EVD) Resize(qlen int) error { return e.c().Resize(qlen) }

// Enable lets events trigger the CNO (dat_evd_enable).
func (e *EVD) Enable() error { return e.c().SetEnabled("evd_enable", true) }

// Disable stops events from triggering the CNO (dat_evd_disable).
func (e *EVD) Disable() error { return e.c().SetEnabled("evd_disable", false) }

// SetUnwaitable makes waits fail with DAT_INVALID_STATE, waking a blocked
// waiter (dat_evd_set_unwaitable). Events still queue.
func (e *EVD) SetUnwaitable() error { return e.c().SetUnwaitable("evd_set_unwaitable", true) }

// ClearUnwaitable makes the EVD waitable again (dat_evd_clear_unwaitable).
func (e *EVD) ClearUnwaitable() error { return e.c().SetUnwaitable("evd_clear_unwaitable", false) }

// ModifyCNO attaches the EVD to cno, or detaches it for nil
// (dat_evd_modify_cno).
func (e *EVD) ModifyCNO(cno *CNO) error { return e.c().ModifyCNO((*core.CNO)(cno)) }

// Free frees the EVD (dat_evd_free): DAT_INVALID_STATE while EPs or
// service points feed it or a waiter blocks on it. The async EVD is freed
// by closing the IA.
func (e *EVD) Free() error { return e.c().Free() }

// HandleType implements dat.Handle.
func (e *EVD) HandleType() dat.HandleType { return dat.HandleTypeEVD }

// SetConsumerContext implements dat.Handle.
func (e *EVD) SetConsumerContext(ctx any) error {
	if err := e.c().LiveEVD("set_consumer_context"); err != nil {
		return err
	}
	return e.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (e *EVD) ConsumerContext() (any, error) {
	if err := e.c().LiveEVD("get_consumer_context"); err != nil {
		return nil, err
	}
	return e.c().ConsumerContext()
}

var _ dat.Handle = (*EVD)(nil)

// SetWaitSpin lets a Wait with threshold 1 that finds no event poll for
// up to d before it sleeps (0, the default, turns it off). It pays where
// waking a sleeping waiter costs more than the next completion takes to
// come: a C thread that calls in through cgo, as the uDAPL provider
// library's callers do, is woken through its OS thread. The budget halves
// each time it runs out without an event (down to d/16) and comes back
// when events arrive within it. Only EVDs with DTO or RMR-bind streams
// spin.
func (e *EVD) SetWaitSpin(d time.Duration) { e.c().SetWaitSpin(d) }
