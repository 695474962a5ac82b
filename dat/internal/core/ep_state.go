package core

import "github.com/godapl/godapl/dat"

// stateSet is a set of EP states.
type stateSet uint32

func states(ss ...dat.EPState) stateSet {
	var s stateSet
	for _, x := range ss {
		s |= 1 << x
	}
	return s
}

func (s stateSet) has(x dat.EPState) bool { return s&(1<<x) != 0 }

// Where each EP operation is legal (dat-api.md section 4, from the man
// pages). Every operation checks its set in one place, require, which
// answers DAT_INVALID_STATE with the subtype of the current state.
var (
	allStates       = stateSet(1<<(dat.EPStateConnectedMultiPath+1) - 1)
	canConnect      = states(dat.EPStateUnconnected)
	canPostRequest  = states(dat.EPStateConnected, dat.EPStateDisconnected)
	canPostRecv     = allStates
	canDisconnect   = states(dat.EPStateActiveConnectionPending, dat.EPStateCompletionPending, dat.EPStateConnected, dat.EPStateDisconnectPending, dat.EPStateDisconnected)
	canFree         = allStates &^ states(dat.EPStateReserved, dat.EPStatePassiveConnectionPending, dat.EPStateTentativeConnectionPending)
	canReset        = states(dat.EPStateUnconnected, dat.EPStateDisconnected)
	canReserve      = states(dat.EPStateUnconnected)
	canAccept       = states(dat.EPStateUnconnected, dat.EPStatePassiveConnectionPending, dat.EPStateTentativeConnectionPending)
	canModifyPZ     = states(dat.EPStateUnconnected, dat.EPStateTentativeConnectionPending)
	canModifyConfig = states(dat.EPStateUnconnected, dat.EPStateReserved, dat.EPStatePassiveConnectionPending, dat.EPStateTentativeConnectionPending)
)

// State returns the EP's state.
func (ep *EP) State() dat.EPState { return dat.EPState(ep.state.Load()) }

// require checks that op is legal in the current state.
func (ep *EP) require(op string, allowed stateSet) error {
	st := ep.State()
	if !allowed.has(st) {
		return dat.NewError(op, dat.InvalidState, st.StateSubtype())
	}
	return nil
}

// setState records a transition; callers hold ep.mu. When the EP starts
// or stops posting requests, the post snapshot follows (postCfg.reqIOV),
// before the transition's caller lets go of mu.
func (ep *EP) setState(s dat.EPState) {
	ep.state.Store(uint32(s))
	if c := ep.cfg.Load(); c != nil && (c.reqIOV[dat.DTOSend] >= 0) != canPostRequest.has(s) {
		n := *c
		n.setPostable(s)
		ep.cfg.Store(&n)
	}
}
