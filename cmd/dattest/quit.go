package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
)

// quitServer asks the server at addr:qual to stop (dapltest -T Q): a
// connection request carrying quitMagic, which the server rejects with
// quitReply before it stops.
func quitServer(ctx context.Context, i *ia.IA, addr netip.Addr, qual dat.ConnQual, timeout time.Duration) error {
	pz, err := i.CreatePZ()
	if err != nil {
		return err
	}
	defer pz.Free()
	ev, err := evd.Create(i, 8, nil, dat.EVDDefault)
	if err != nil {
		return err
	}
	defer ev.Free()
	e, err := ep.Create(i, pz, ev, ev, ev, nil)
	if err != nil {
		return err
	}
	defer e.Free()
	if err := e.Connect(addr, qual, timeout, []byte(quitMagic), dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	got, _, err := ev.Wait(wctx, 1)
	if err != nil {
		return fmt.Errorf("waiting for the server's answer: %w", err)
	}
	switch got.Number {
	case dat.ConnectionEventPeerRejected:
		// Over IB and RoCE the reject data comes zero-padded.
		why := strings.TrimRight(string(got.Conn.PrivateData), "\x00")
		if why == quitReply {
			return nil
		}
		return fmt.Errorf("the server refused to quit: %s", why)
	case dat.ConnectionEventEstablished:
		e.Disconnect(dat.CloseAbrupt)
		return errors.New("the peer accepted a quit request: not a dattest server")
	case dat.ConnectionEventNonPeerRejected:
		return errors.New("connection refused (no dattest server reachable at that address and port)")
	}
	return fmt.Errorf("connection setup ended with %v", got.Number)
}
