package main

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

type mode int

const (
	modeSend mode = iota
	modeListen
	modePing
)

// defaultTimeout bounds sending and pinging when --timeout is not given.
const defaultTimeout = 10 * time.Second

// check validates the command line and returns the mode and, for sending
// and pinging, the destination.
func (o *options) check(args []string) (mode, netip.AddrPort, error) {
	var none netip.AddrPort
	if o.echo {
		o.listen = true
	}
	switch {
	case o.listen && o.ping != "":
		return 0, none, rdstool.Usagef("-l/--echo and --ping exclude each other")
	case o.count < 0 || o.timeout < 0 || o.wait < 0 || o.sndbuf <= 0:
		return 0, none, rdstool.Usagef("--count, --timeout and --wait must not be negative, --sndbuf positive")
	case o.size > wire.MaxMsgSize:
		return 0, none, rdstool.Usagef("--size %d: an RDS datagram holds at most %d bytes", o.size, wire.MaxMsgSize)
	}
	if o.listen {
		if len(args) != 0 {
			return 0, none, rdstool.Usagef("-l takes no destination")
		}
		if o.bind == "" {
			return 0, none, rdstool.Usagef("-l needs -b ADDR:PORT")
		}
		return modeListen, none, nil
	}
	if o.timeout == 0 {
		o.timeout = defaultTimeout
	}
	if o.ping != "" {
		a, err := rdstool.ParseAddr("--ping", o.ping)
		if err != nil {
			return 0, none, err
		}
		if len(args) != 0 {
			return 0, none, rdstool.Usagef("--ping takes no destination argument")
		}
		if o.count == 0 {
			o.count = 1
		}
		return modePing, netip.AddrPortFrom(a, 0), nil
	}
	if len(args) != 1 {
		return 0, none, rdstool.Usagef("want -l, --ping or one destination DEST:PORT")
	}
	dst, err := rdstool.ParseAddrPort("destination", args[0])
	if err != nil {
		return 0, none, err
	}
	if o.size < 0 && o.count != 0 {
		return 0, none, rdstool.Usagef("--count without --size: lines are sent as they come")
	}
	if o.size >= 0 && o.count == 0 {
		o.count = 1
	}
	if o.size >= 0 && o.file != "" {
		return 0, none, rdstool.Usagef("-f and --size exclude each other")
	}
	return modeSend, dst, nil
}

// local returns the address to bind: -b, or for sending and pinging the
// address the host routes to the destination from, with a free port.
func (o *options) local(m mode, dst netip.AddrPort) (netip.AddrPort, error) {
	if o.bind != "" {
		return rdstool.ParseAddrPort("-b", o.bind)
	}
	src, err := rdstool.SourceFor(dst.Addr())
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(src, 0), nil
}
