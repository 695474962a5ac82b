package fastpath

// EndHooker is a context that runs a hook in the goroutine that ends it,
// the moment it ends. A provider whose wait sleeps where ctx.Done cannot
// reach (a descriptor in the network poller) wakes the sleeper from the
// hook itself: context.AfterFunc would put a goroutine of its own between
// the end of the context and the sleeper, one more hand-off per
// interrupt. DAT's waiter context (dat/internal/core's directCtx) is one.
//
// SetEndHook installs *f, or removes the hook for nil; a later call
// replaces an earlier one, as one waiter at a time sleeps with the
// context. The hook may run after it has been removed, if the context
// ended meanwhile, and must tolerate that (a spurious wake-up). It must
// not block: it runs under the locks of whoever ends the context. The
// caller checks ctx.Err after installing the hook, as a context that has
// ended already does not run it.
type EndHooker interface {
	SetEndHook(f *func())
}
