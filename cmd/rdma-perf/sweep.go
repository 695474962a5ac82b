package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/godapl/godapl/internal/perf"
)

// perftestFlags are the flags rdma-perf takes with perftest's letters and
// meanings: -a runs every size from 2 bytes to 8 MiB, -s picks one size,
// -n ends each measurement after that many messages instead of -d.
type perftestFlags struct {
	all   bool
	size  string
	iters uint64
}

// Sweep sizes: perftest's -a goes from 2^1 to 2^23 bytes.
const (
	sweepMinShift = 1
	sweepMaxShift = 23
)

func (f *perftestFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.all, "a", false, "run each test at every size from 2 B to 8 MiB (powers of two), as perftest -a")
	fs.StringVar(&f.size, "s", "", "message `size` of every test, in bytes or with K or M (default: each test's own)")
	fs.Uint64Var(&f.iters, "n", 0, "end each measurement after this many `iters` instead of -d")
}

// expand returns the cases to run: each selected case at the size -s
// gives, or at every sweep size with -a, or as it is.
func (f *perftestFlags) expand(cases []testCase) ([]testCase, error) {
	var sizes []int
	switch {
	case f.all && f.size != "":
		return nil, fmt.Errorf("-a and -s exclude each other (-a runs every size)")
	case f.all:
		for s := sweepMinShift; s <= sweepMaxShift; s++ {
			sizes = append(sizes, 1<<s)
		}
	case f.size != "":
		n, err := parseSize(f.size)
		if err != nil {
			return nil, err
		}
		sizes = []int{n}
	default:
		return cases, nil
	}
	var out []testCase
	for _, c := range cases {
		for _, s := range sizes {
			p := c.params
			p.Size = s
			out = append(out, testCase{name: fmt.Sprintf("%s@%d", testName(p.Test), s), params: p})
		}
	}
	return out, nil
}

// testName names a workload without its size.
func testName(t perf.Test) string {
	switch t {
	case perf.TestWrite:
		return "write"
	case perf.TestSendRate:
		return "send"
	}
	return "pingpong"
}

// parseSize reads -s: bytes, or with a K or M suffix (powers of 1024).
func parseSize(s string) (int, error) {
	num, mult := s, 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		num, mult = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		num, mult = s[:len(s)-1], 1<<20
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > perf.MaxSize/mult {
		return 0, fmt.Errorf("-s %q: want a size from 1 to %d bytes (K and M allowed)", s, perf.MaxSize)
	}
	return n * mult, nil
}
