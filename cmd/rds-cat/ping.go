package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"
)

// pingLoop sends --count pings to dst's port 0 and prints a line per
// pong ("pong N from ADDR:0 len 0 rtt D"); a pong missing after
// --timeout fails the run.
func (c *cat) pingLoop(ctx context.Context, dst netip.Addr) error {
	to := netip.AddrPortFrom(dst, 0)
	c.s.SetDeadline(time.Now().Add(c.o.timeout))
	for i := range c.o.count {
		t0 := time.Now()
		if _, err := c.s.SendTo(nil, to, 0); err != nil {
			return err
		}
		for {
			m, n, err := c.recv()
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("ping %d to %v: no pong within %v: %w", i, dst, c.o.timeout, err)
			}
			if n == 0 && m.Addr == to {
				fmt.Fprintf(c.out, "pong %d from %v len %d rtt %v\n", i, m.Addr, n, time.Since(t0).Round(time.Microsecond))
				break
			}
		}
	}
	return nil
}
