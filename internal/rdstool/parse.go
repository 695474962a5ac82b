package rdstool

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads a byte count as rds-tools takes it: a number, decimal
// or 0x-prefixed, optionally followed by K, M or G (binary multiples, as
// "-q 1K -D 1M"). It returns a usage error naming flag when s is not one
// or exceeds limit.
func ParseSize(flag, s string, limit int64) (int64, error) {
	num, shift := s, 0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			num, shift = s[:n-1], 10
		case 'm', 'M':
			num, shift = s[:n-1], 20
		case 'g', 'G':
			num, shift = s[:n-1], 30
		}
	}
	v, err := strconv.ParseInt(num, 0, 64)
	if err != nil || v < 0 || v > math.MaxInt64>>shift || v<<shift > limit {
		return 0, Usagef("%s %q: want a byte count up to %d, optionally with K, M or G", flag, s, limit)
	}
	return v << shift, nil
}

// ParseInterval reads rds-ping's -i: seconds, possibly fractional, or a
// number followed by "msec" or "usec" (or a Go duration such as "200ms").
func ParseInterval(flag, s string) (time.Duration, error) {
	num, unit := s, float64(time.Second)
	switch {
	case strings.HasSuffix(s, "msec"):
		num, unit = strings.TrimSuffix(s, "msec"), float64(time.Millisecond)
	case strings.HasSuffix(s, "usec"):
		num, unit = strings.TrimSuffix(s, "usec"), float64(time.Microsecond)
	}
	if f, err := strconv.ParseFloat(num, 64); err == nil && f > 0 && f*unit < float64(math.MaxInt64) {
		if d := time.Duration(f * unit); d > 0 {
			return d, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, Usagef("%s %q: want seconds (\"0.5\"), or a number with msec or usec (\"200msec\")", flag, s)
}

// ResolveAddr turns what a user gives for a host (an IPv4 address or a
// host name, as the real tools take) into an IPv4 address. A name that
// does not resolve to one is a usage error naming flag.
func ResolveAddr(ctx context.Context, flag, s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a = a.Unmap(); a.Is4() {
			return a, nil
		}
		return netip.Addr{}, Usagef("%s %q: RDS here speaks IPv4 only", flag, s)
	}
	if s == "" {
		return netip.Addr{}, Usagef("%s: want a host name or an IPv4 address", flag)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", s)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, Usagef("%s %q: not an IPv4 address, and the name does not resolve to one", flag, s)
	}
	return ips[0].Unmap(), nil
}

// Refusal records flags the real tool has and this one refuses, so that
// Check can name the first one given with the reason it makes no sense
// here (never silently ignored).
type Refusal struct{ given []string }

// Bool registers a refused flag without a value under each name.
func (r *Refusal) Bool(fs interface {
	BoolFunc(name, usage string, fn func(string) error)
}, reason string, names ...string) {
	for _, n := range names {
		fs.BoolFunc(n, "refused here: "+reason, func(string) error {
			r.given = append(r.given, fmt.Sprintf("-%s is refused here: %s", n, reason))
			return nil
		})
	}
}

// Value registers a refused flag that takes a value under each name.
func (r *Refusal) Value(fs interface {
	Func(name, usage string, fn func(string) error)
}, reason string, names ...string) {
	for _, n := range names {
		fs.Func(n, "refused here: "+reason, func(string) error {
			r.given = append(r.given, fmt.Sprintf("-%s is refused here: %s", n, reason))
			return nil
		})
	}
}

// Check returns a usage error for the first refused flag given.
func (r *Refusal) Check() error {
	if len(r.given) == 0 {
		return nil
	}
	return Usagef("%s", r.given[0])
}
