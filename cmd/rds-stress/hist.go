package main

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// hist is a log-linear latency histogram: eight buckets per power of two
// of nanoseconds, so a percentile read from it is within 12.5 % of the
// true value, recording costs one atomic add and no allocation, and the
// reporter can read it while the task writes.
type hist struct {
	b [histBuckets]atomic.Uint64
}

const (
	histSub     = 8                        // buckets per power of two (3 bits)
	histBuckets = (63-2)*histSub + histSub // bucketOf(1<<64-1) is the last
)

// bucketOf returns the bucket of v nanoseconds.
func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // >= 3
	sub := (v >> (e - 3)) & (histSub - 1)
	return (e-2)*histSub + int(sub)
}

// bucketLow returns the smallest value of bucket i.
func bucketLow(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	e := i/histSub + 2
	return (histSub + uint64(i%histSub)) << (e - 3)
}

func (h *hist) record(d time.Duration) { h.b[bucketOf(uint64(max(d, 0)))].Add(1) }

// counts is a plain snapshot of a histogram.
type counts [histBuckets]uint64

func (h *hist) snapshot(c *counts) {
	for i := range h.b {
		c[i] = h.b[i].Load()
	}
}

func (c *counts) add(o *counts) {
	for i := range c {
		c[i] += o[i]
	}
}

func (c *counts) sub(o *counts) {
	for i := range c {
		c[i] -= o[i]
	}
}

func (c *counts) total() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// quantile returns the q-quantile (0 < q <= 1) as the midpoint of its
// bucket, 0 for an empty histogram.
func (c *counts) quantile(q float64) time.Duration {
	n := c.total()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, v := range c {
		seen += v
		if seen >= rank {
			lo := bucketLow(i)
			hi := lo + 1
			if i+1 < histBuckets {
				hi = bucketLow(i + 1)
			}
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0
}

// pow2Bin is one line of the printed histogram: latencies in
// [Low, High) microseconds.
type pow2Bin struct {
	LowUS  uint64 `json:"low_us"`
	HighUS uint64 `json:"high_us"`
	Count  uint64 `json:"count"`
}

// pow2 folds the histogram into power-of-two microsecond bins (rds-tools'
// --show-histogram layout), from the first to the last non-empty one.
func (c *counts) pow2() []pow2Bin {
	var bins []pow2Bin
	for i, v := range c {
		if v == 0 {
			continue
		}
		us := bucketLow(i) / 1000
		k := bits.Len64(us) // bin k holds [2^(k-1), 2^k) µs; bin 0 holds [0, 1)
		for len(bins) <= k {
			j := len(bins)
			low := uint64(0)
			if j > 0 {
				low = 1 << (j - 1)
			}
			bins = append(bins, pow2Bin{LowUS: low, HighUS: 1 << j})
		}
		bins[k].Count += v
	}
	for len(bins) > 0 && bins[0].Count == 0 {
		bins = bins[1:]
	}
	return bins
}
