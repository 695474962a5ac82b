package core

import (
	"sync/atomic"

	"github.com/godapl/godapl/dat"
)

// Object is what every DAT object embeds: its handle type, the public
// handle that events carry, whether it was freed, and the consumer
// context.
type Object struct {
	typ    dat.HandleType
	handle dat.Handle
	freed  atomic.Bool
	ctx    atomic.Pointer[any]
}

func (o *Object) init(t dat.HandleType) { o.typ = t }

// SetHandle records the public handle of the object; the creating package
// calls it once, before the object is visible to anyone else.
func (o *Object) SetHandle(h dat.Handle) { o.handle = h }

// Handle returns the public handle.
func (o *Object) Handle() dat.Handle { return o.handle }

// HandleType implements dat.Handle.
func (o *Object) HandleType() dat.HandleType { return o.typ }

// Freed reports whether the object was freed.
func (o *Object) Freed() bool { return o.freed.Load() }

// invalidSub is the DAT_INVALID_HANDLE subtype of each handle type.
var invalidSub = [...]dat.Subtype{
	dat.HandleTypeCR: dat.InvalidHandleCR, dat.HandleTypeEP: dat.InvalidHandleEP,
	dat.HandleTypeEVD: dat.InvalidHandleEVDRequest, dat.HandleTypeIA: dat.InvalidHandleIA,
	dat.HandleTypeLMR: dat.InvalidHandleLMR, dat.HandleTypePSP: dat.InvalidHandlePSP,
	dat.HandleTypePZ: dat.InvalidHandlePZ, dat.HandleTypeRMR: dat.InvalidHandleRMR,
	dat.HandleTypeRSP: dat.InvalidHandleRSP, dat.HandleTypeCNO: dat.InvalidHandleCNO,
	dat.HandleTypeSRQ: dat.InvalidHandleSRQ, dat.HandleTypeCSP: dat.InvalidHandleCSP,
}

// InvalidHandle returns the DAT_INVALID_HANDLE error for an object of type t.
func InvalidHandle(op string, t dat.HandleType) *dat.Error {
	return dat.NewError(op, dat.InvalidHandle, invalidSub[t])
}

// Live returns DAT_INVALID_HANDLE for a nil or freed object.
func (o *Object) Live(op string) error {
	if o == nil || o.freed.Load() {
		t := dat.HandleTypeIA
		if o != nil {
			t = o.typ
		}
		return InvalidHandle(op, t)
	}
	return nil
}

// SetConsumerContext implements dat.Handle.
func (o *Object) SetConsumerContext(ctx any) error {
	if err := o.Live("set_consumer_context"); err != nil {
		return err
	}
	o.ctx.Store(&ctx)
	return nil
}

// ConsumerContext implements dat.Handle.
func (o *Object) ConsumerContext() (any, error) {
	if err := o.Live("get_consumer_context"); err != nil {
		return nil, err
	}
	if p := o.ctx.Load(); p != nil {
		return *p, nil
	}
	return nil, nil
}
