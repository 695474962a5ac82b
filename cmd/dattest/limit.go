package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// limitConfig caps each search of the limit test, so that a provider
// claiming huge limits does not exhaust the machine.
type limitConfig struct {
	maxEPs  int   // EPs created at once
	maxQLen int   // EVD queue length
	maxLMR  int64 // bytes in one LMR
}

// A limit is one result line: the largest value the provider accepted,
// what it claims in its attributes, and why the search stopped.
type limit struct {
	name    string
	found   int64
	claimed int64
	stop    string // "refused: <error>" or "cap"
}

func (l limit) print(out io.Writer) {
	fmt.Fprintf(out, "limit %-10s %12d  (claimed %d; %s)\n", l.name+":", l.found, l.claimed, l.stop)
}

// runLimits searches each limit on i until the provider refuses or the
// cap is reached, and prints one line per limit. It fails if the provider
// refuses less than it claims, or accepts more than it claims.
func runLimits(i *ia.IA, c limitConfig, out io.Writer) error {
	attr, _, err := i.Query()
	if err != nil {
		return err
	}
	pz, err := i.CreatePZ()
	if err != nil {
		return err
	}
	defer pz.Free()
	var bad []error
	for _, f := range []func() (limit, error){
		func() (limit, error) { return limitEPs(i, pz, c.maxEPs, int64(attr.MaxEPs)) },
		func() (limit, error) { return limitQLen(i, c.maxQLen, int64(attr.MaxEVDQLen)) },
		func() (limit, error) { return limitLMR(i, pz, c.maxLMR, int64(min(attr.MaxLMRBlockSize, 1<<62))) },
	} {
		l, err := f()
		if err != nil {
			return err
		}
		l.print(out)
		if l.stop != "cap" && l.found < l.claimed {
			bad = append(bad, fmt.Errorf("%s: refused at %d, claims %d", l.name, l.found+1, l.claimed))
		}
		if l.found > l.claimed {
			bad = append(bad, fmt.Errorf("%s: accepted %d, claims %d", l.name, l.found, l.claimed))
		}
	}
	return errors.Join(bad...)
}

// limitEPs creates EPs (each with its QP) until the provider refuses.
func limitEPs(i *ia.IA, pz *ia.PZ, capN int, claimed int64) (limit, error) {
	l := limit{name: "EPs", claimed: claimed, stop: "cap"}
	e, err := evd.Create(i, 16, nil, dat.EVDDefault)
	if err != nil {
		return l, err
	}
	defer e.Free()
	attr := dat.EPAttr{MaxRecvDTOs: 1, MaxRequestDTOs: 1, MaxRecvIOV: 1, MaxRequestIOV: 1}
	var eps []*ep.EP
	defer func() {
		for _, x := range eps {
			x.Free()
		}
	}()
	for len(eps) < capN && int64(len(eps)) <= claimed {
		x, err := ep.Create(i, pz, e, e, e, &attr)
		if err != nil {
			l.stop = "refused: " + err.Error()
			break
		}
		eps = append(eps, x)
	}
	l.found = int64(len(eps))
	return l, nil
}

// limitQLen finds the longest EVD the provider creates: a doubling
// search, then a bisection between the last success and first refusal.
func limitQLen(i *ia.IA, capN int, claimed int64) (limit, error) {
	try := func(n int64) error {
		e, err := evd.Create(i, int(n), nil, dat.EVDDefault)
		if err == nil {
			e.Free()
		}
		return err
	}
	return search("EVD qlen", int64(capN), claimed, 1, try)
}

// limitLMR finds the largest LMR the provider registers (memory from the
// mmap allocator, never touched, so the search costs address space only).
func limitLMR(i *ia.IA, pz *ia.PZ, capN int64, claimed int64) (limit, error) {
	try := func(n int64) error {
		if n > int64(^uint(0)>>1) {
			return fmt.Errorf("%d bytes do not fit an int", n)
		}
		m, err := lmr.Alloc(i, pz, int(n), dat.MemPrivAll)
		if err == nil {
			m.Free()
		}
		return err
	}
	l, err := search("LMR bytes", capN, claimed, 4096, try)
	return l, err
}

// search finds the largest n in [lo, capN] with try(n) == nil, assuming
// try succeeds below some bound and fails above it. It also probes just
// past the claimed limit when that is within the cap.
func search(name string, capN, claimed, lo int64, try func(int64) error) (limit, error) {
	l := limit{name: name, claimed: claimed, stop: "cap"}
	if err := try(lo); err != nil {
		return l, fmt.Errorf("limit %s: even %d is refused: %w", name, lo, err)
	}
	good, bad := lo, int64(0)
	var badErr error
	for n := lo * 2; bad == 0; n *= 2 {
		if n > capN {
			n = capN
		}
		if n <= good {
			break
		}
		if err := try(n); err != nil {
			bad, badErr = n, err
		} else {
			good = n
		}
	}
	for bad != 0 && bad-good > 1 {
		mid := good + (bad-good)/2
		if err := try(mid); err != nil {
			bad, badErr = mid, err
		} else {
			good = mid
		}
	}
	l.found = good
	if bad != 0 {
		l.stop = "refused: " + badErr.Error()
	}
	return l, nil
}
