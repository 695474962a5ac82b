package siw

import (
	"context"
	"fmt"
	"net/netip"
	"sync"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// Device is an open siw device: the engine's objects (PDs, MRs, CQs, QPs,
// SRQs) plus a connection manager that runs iWARP over TCP.
//
// The device owns every goroutine the provider starts: listener accept
// loops, MPA handshakes of incoming connections, and the tx and rx
// goroutines of each connected QP. Close stops them all and waits for them.
type Device struct {
	*soft.Device
	opts  Options
	addrs []netip.Addr // the interface's IPv4 addresses; nil for the all-address device

	// closing is cancelled by Close; in-flight connection setups watch it.
	closing context.Context
	cancel  context.CancelFunc

	mu        sync.Mutex
	closed    bool                   // guarded by mu
	listeners map[*listener]struct{} // guarded by mu
	streams   map[*stream]struct{}   // guarded by mu
	wg        sync.WaitGroup         // every goroutine of the device; Add only under mu while !closed
}

func newDevice(name string, addrs []netip.Addr, opts Options) *Device {
	ctx, cancel := context.WithCancel(context.Background())
	d := &Device{
		Device:    soft.NewDevice(deviceAttr(name)),
		opts:      opts,
		addrs:     addrs,
		closing:   ctx,
		cancel:    cancel,
		listeners: make(map[*listener]struct{}),
		streams:   make(map[*stream]struct{}),
	}
	d.Device.Owner = d
	return d
}

// goroutine runs fn in a goroutine the device waits for on Close. It
// returns false, without running fn, once the device is closed.
func (d *Device) goroutine(fn func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		fn()
	}()
	return true
}

// addStream registers s and starts its goroutines; false if the device
// closed meanwhile.
func (d *Device) addStream(s *stream) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	d.streams[s] = struct{}{}
	d.wg.Add(2)
	go func() {
		defer d.wg.Done()
		s.runTx()
	}()
	go func() {
		defer d.wg.Done()
		s.runRx()
	}()
	return true
}

func (d *Device) removeStream(s *stream) {
	d.mu.Lock()
	delete(d.streams, s)
	d.mu.Unlock()
}

// ownQP returns qp as an engine QP of this device.
func (d *Device) ownQP(qp verbs.QP) (*soft.QP, error) {
	sqp, ok := qp.(*soft.QP)
	if !ok || sqp.Device() != d.Device {
		return nil, fmt.Errorf("siw: queue pair of another device: %w", verbs.ErrInvalidArgument)
	}
	if st := sqp.State(); st != verbs.QPStateReset && st != verbs.QPStateInit {
		return nil, verbs.ErrInvalidState
	}
	return sqp, nil
}

// Close implements verbs.Device: listeners stop (requests waiting in
// their backlogs are rejected), connection setups in progress fail,
// connected streams are torn down without a Terminate (the peers see
// the TCP connection close), every object is destroyed with its work
// requests flushed, and Close returns once all goroutines of the device
// have ended.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	ls := make([]*listener, 0, len(d.listeners))
	for l := range d.listeners {
		ls = append(ls, l)
	}
	ss := make([]*stream, 0, len(d.streams))
	for s := range d.streams {
		ss = append(ss, s)
	}
	d.mu.Unlock()
	d.cancel()
	for _, l := range ls {
		l.Close()
	}
	for _, s := range ss {
		s.Close()
	}
	d.CloseObjects()
	d.wg.Wait()
	return nil
}

var _ verbs.Device = (*Device)(nil)
