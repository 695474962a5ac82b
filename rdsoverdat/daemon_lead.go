package rdsoverdat

import "context"

// Reading the daemon's records with rings. No goroutine reads them on
// the client's side: a call waiting for its reply takes the reading
// token (k.lead) and reads the ring itself, handing the replies of
// other calls to them and keeping messages handed ahead, until its own
// reply comes; then it passes the token on, to the next waiting call
// if there is one. A lone call, the usual case, is woken by the
// daemon's ring write and returns with no goroutine in between, which
// is what makes a round trip cheap: a reader goroutine and a hand-over
// cost a wake-up each way.
//
// The socket watcher (daemon_rings.go) ends the connection when the
// daemon goes: it shuts the rings down, which makes the token holder
// fail its read, then takes the token and fails every call.

// await waits for c's reply, reading the ring while it holds the token.
// It returns ctx's error if ctx ends first (nil ctx: never), with the
// call still registered.
func (k *daemonSocket) await(ctx context.Context, c *dcall) error {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	for {
		select {
		case <-c.done:
			return nil
		case <-done:
			return ctx.Err()
		case <-k.lead: // nil without rings: the reader goroutine serves
			got, err := k.readFor(ctx, c)
			k.lead <- struct{}{}
			if got {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// readFor reads and hands out records, holding the token, until c has
// its reply (true) or ctx ends (its error).
func (k *daemonSocket) readFor(ctx context.Context, c *dcall) (bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		select {
		case <-c.done:
			return true, nil
		default:
		}
		r, err := k.c.ReadRing(ctx, &k.rbuf)
		if err != nil && ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			err = k.dispatch(r, nil, &k.rbuf)
		}
		if err != nil {
			k.finish() // fails c too: the loop returns
		}
	}
}

// drainRing hands out the records there now, holding the token.
func (k *daemonSocket) drainRing() {
	for {
		r, err := k.c.TryReadRing(&k.rbuf)
		if r == nil || err != nil {
			return
		}
		if k.dispatch(r, nil, &k.rbuf) != nil {
			k.finish()
			return
		}
	}
}

// pollRing hands out the records there now if no call reads, so that a
// posted send's failure reaches the next send even when no call waits.
func (k *daemonSocket) pollRing() {
	if k.lead == nil || !k.c.RingPending() {
		return // an empty ring, the usual case, costs no token
	}
	select {
	case <-k.lead:
		k.drainRing()
		k.lead <- struct{}{}
	default:
	}
}
