package xport

import (
	"sync"
	"sync/atomic"
	"time"
)

// Role is the state machine of a role that a transport's own goroutine
// (its owner) lends to a socket's receivers: the tcp transport's reader
// role of a connection, the dat transport's event role of a node. What
// holding the role drives (reading a stream, taking events off an EVD)
// is the transport's; Role only says who holds it and when it goes back.
//
//   - The owner lends the role (Lend) to a socket whose RecvMsg was
//     waiting for what it just delivered, and parks until the role is
//     its own again. The role is then idle.
//   - A RecvMsg of that socket that finds its queue empty takes the idle
//     role (Take), does the owner's work until it has something to
//     return, and leaves (Leave): idle again, or back to the owner when
//     the role cannot go on (the connection failed, the socket closed).
//   - A timer checks on a lent role: armed when the role goes idle and no
//     check is pending, it takes the role back for the owner if nobody
//     took it since it was armed; if somebody did and the role is idle
//     again, it checks once more a period later. What arrives for others
//     thus waits at most two grace periods behind a receiver that stopped
//     receiving, and a steady stream costs one timer per period, not one
//     per message.
//   - The owner takes an idle role back at once when its stop channel
//     closes; a socket gives it back (GiveBack) when it closes, polls or
//     reads in a way that cannot run the role.
//
// Locking: Role's mutex is a leaf, never held while a Receiver is
// called. The state and the count of takes share one atomic word, so
// that a RecvMsg takes an idle role and leaves it idle again with one
// compare-and-swap each, without the mutex, while the check is armed;
// every other change of the word is a compare-and-swap or, by the
// holder, a store, made under the mutex.
type Role struct {
	ref RoleRef

	// w is takes<<8 | state: RecvMsg takes so far, and who holds it.
	w atomic.Uint64

	mu    sync.Mutex
	note  error         // what the last holder left for the owner (Park)
	back  chan struct{} // the role went back to the owner
	grace time.Duration
	timer *time.Timer // the check on a lent role
	armed atomic.Bool // the timer runs; written under mu
	seen  uint64      // takes when the timer was armed

	// For tests and figures: lends by the owner, takes back by the
	// owner's check or stop.
	lends, resumes atomic.Uint64
}

// RoleState is who holds a role.
type RoleState uint8

const (
	RoleOwner RoleState = iota // the transport's goroutine
	RoleIdle                   // lent, nobody holds it; a RecvMsg may take it
	RoleRecv                   // a RecvMsg holds it
	RoleDead                   // the owner has ended
)

// roleWord packs a count of takes and a state into Role.w.
func roleWord(takes uint64, st RoleState) uint64 { return takes<<8 | uint64(st) }

func wordState(w uint64) RoleState { return RoleState(w & 0xff) }
func wordTakes(w uint64) uint64    { return w >> 8 }

// setState moves the role to st from the state the caller knows it is in
// and that nobody else can leave meanwhile (the holder's RoleRecv, the
// owner's RoleOwner), keeping the count of takes.
func (r *Role) setState(st RoleState) {
	r.w.Store(r.w.Load()&^0xff | uint64(st))
}

// casState moves the role from state from to st, keeping the count of
// takes, and reports whether it was in from.
func (r *Role) casState(from, st RoleState) bool {
	for {
		w := r.w.Load()
		if wordState(w) != from {
			return false
		}
		if r.w.CompareAndSwap(w, w&^0xff|uint64(st)) {
			return true
		}
	}
}

// Init readies the role, held by its owner, before anyone can see it: rr
// is the transport's side, which sockets run, and grace the period of the
// check on a lent role.
func (r *Role) Init(rr ReaderRole, grace time.Duration) {
	r.ref.R = rr
	r.back = make(chan struct{}, 1)
	r.grace = grace
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
}

// Ref is the role as sockets hold it.
func (r *Role) Ref() *RoleRef { return &r.ref }

// State returns who holds the role.
func (r *Role) State() RoleState { return wordState(r.w.Load()) }

// SetGrace sets the period of the check, from the next arming on.
func (r *Role) SetGrace(d time.Duration) {
	r.mu.Lock()
	r.grace = d
	r.mu.Unlock()
}

// Counts returns the lends by the owner and its takes back.
func (r *Role) Counts() (lends, resumes uint64) { return r.lends.Load(), r.resumes.Load() }

// Lend leaves the role idle for s's receivers and parks the owner until
// the role is its own again (Park); it returns what Park returns.
func (r *Role) Lend(s Receiver, stop <-chan struct{}) error {
	r.mu.Lock()
	r.setState(RoleIdle)
	r.arm()
	r.mu.Unlock()
	r.lends.Add(1)
	if !s.LendReader(&r.ref) {
		r.GiveBack()
	}
	return r.Park(stop)
}

// arm starts the check on the idle role unless one is pending; r.mu is
// held.
func (r *Role) arm() {
	if !r.armed.Load() {
		r.armed.Store(true)
		r.seen = wordTakes(r.w.Load())
		r.timer.Reset(r.grace)
	}
}

// Park waits until the role is the owner's again: given back, taken back
// by the check, or taken back as soon as it is idle once stop is closed.
// It returns the note the last holder left (Leave, Decline), if any.
func (r *Role) Park(stop <-chan struct{}) error {
	for {
		r.mu.Lock()
		if r.State() == RoleOwner {
			note := r.note
			r.note = nil
			r.armed.Store(false)
			r.timer.Stop()
			r.mu.Unlock()
			return note
		}
		r.mu.Unlock()
		select {
		case <-r.back:
		case <-stop:
			stop = nil
			r.takeBack(false)
		case <-r.timer.C:
			r.takeBack(true)
		}
	}
}

// takeBack makes an idle role the owner's: at once, or (check) if nobody
// took it since the timer was armed; a role taken and idle again gets
// another period.
func (r *Role) takeBack(check bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if check {
		// Before the look at the state: a Leave that made the role idle
		// without the mutex looks at armed after, so that one of the
		// two sees the other's store (Leave).
		r.armed.Store(false)
	}
	w := r.w.Load()
	if wordState(w) != RoleIdle {
		return
	}
	if check && wordTakes(w) != r.seen {
		r.arm()
		return
	}
	if r.w.CompareAndSwap(w, w&^0xff|uint64(RoleOwner)) {
		r.resumes.Add(1)
	}
}

// End marks the role dead when its owner ends (holding it): nobody takes
// it again.
func (r *Role) End() {
	r.mu.Lock()
	r.setState(RoleDead)
	r.mu.Unlock()
	r.timer.Stop()
}

// GiveBack returns an idle role to its owner (ReaderRole).
func (r *Role) GiveBack() {
	r.mu.Lock()
	idle := r.casState(RoleIdle, RoleOwner)
	r.mu.Unlock()
	if idle {
		Signal(r.back)
	}
}

// Take begins a run of the role by a RecvMsg of s (ReaderRole.Run): true
// if it took the idle role, which the caller then holds until Leave.
// Otherwise the run is over, s is told (ReaderDone), and the result says
// why: RRBusy, another RecvMsg holds the role; RRGone, its owner has it
// or has ended; RRAgain, s was interrupted (Receiver.Interrupted) and
// must look at its queue first, the role left idle or, if s closed,
// given back.
func (r *Role) Take(s Receiver) (RRResult, bool) {
	for {
		w := r.w.Load()
		switch wordState(w) {
		case RoleIdle:
		case RoleRecv:
			s.ReaderDone(&r.ref, false)
			return RRBusy, false
		default:
			s.ReaderDone(&r.ref, true)
			return RRGone, false
		}
		if r.w.CompareAndSwap(w, roleWord(wordTakes(w)+1, RoleRecv)) {
			break
		}
	}
	if s.Interrupted() {
		// What interrupted s (a message, a notification, a new
		// deadline, its close) came after its RecvMsg looked and
		// before it held the role, and was spent on the holder
		// before it: reading now could wait for good with that
		// message queued. Any interrupt from now on ends this
		// holder's reads.
		r.Leave(s, s.Closed(), nil)
		return RRAgain, false
	}
	return RRAgain, true
}

// Decline is Take for a RecvMsg of s that will not run the role: an idle
// role goes straight back to its owner, whose Park returns note. The run
// is over either way, s is told, and the result is Take's: RRBusy, or
// RRGone.
func (r *Role) Decline(s Receiver, note error) RRResult {
	r.mu.Lock()
	switch {
	case r.casState(RoleIdle, RoleOwner):
		r.note = note
		r.mu.Unlock()
		Signal(r.back)
	case r.State() == RoleRecv:
		r.mu.Unlock()
		s.ReaderDone(&r.ref, false)
		return RRBusy
	default:
		r.mu.Unlock()
	}
	s.ReaderDone(&r.ref, true)
	return RRGone
}

// Leave ends a run that Take began: back hands the role to its owner,
// whose Park returns note; otherwise the role is idle again, under the
// check. Then s is told.
func (r *Role) Leave(s Receiver, back bool, note error) {
	switch {
	case back:
		r.mu.Lock()
		r.setState(RoleOwner)
		r.note = note
		r.mu.Unlock()
		Signal(r.back)
	default:
		// Idle first, then the look at armed: a check that disarmed
		// itself meanwhile saw the role held (and left it), or sees it
		// idle (and handles it); in the first case armed is false here
		// and the check is armed again under the mutex.
		r.setState(RoleIdle)
		if !r.armed.Load() {
			r.mu.Lock()
			if r.State() == RoleIdle {
				r.arm()
			}
			r.mu.Unlock()
		}
	}
	s.ReaderDone(&r.ref, false)
}
