package main

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	prev := -1
	for _, v := range []uint64{0, 1, 7, 8, 9, 15, 16, 17, 1000, 1 << 20, 1<<63 - 1, 1<<64 - 1} {
		i := bucketOf(v)
		if i < prev || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d after %d", v, i, prev)
		}
		if lo := bucketLow(i); lo > v || (i+1 < histBuckets && bucketLow(i+1) <= v) {
			t.Fatalf("value %d in bucket %d [%d, %d)", v, i, lo, bucketLow(i+1))
		}
		prev = i
	}
}

// Quantiles from the histogram are within one bucket (12.5 %) of the
// exact ones.
func TestQuantiles(t *testing.T) {
	var h hist
	vals := make([]time.Duration, 10000)
	for i := range vals {
		vals[i] = time.Duration(rand.ExpFloat64() * float64(50*time.Microsecond))
		h.record(vals[i])
	}
	slices.Sort(vals)
	var c counts
	h.snapshot(&c)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := vals[int(q*float64(len(vals)))-1]
		got := c.quantile(q)
		if d := float64(got-exact) / float64(exact); d > 0.13 || d < -0.13 {
			t.Errorf("p%v = %v, exact %v", q*100, got, exact)
		}
	}
	var bins uint64
	for _, b := range c.pow2() {
		bins += b.Count
	}
	if bins != uint64(len(vals)) {
		t.Errorf("pow2 bins hold %d of %d", bins, len(vals))
	}
}

func TestHistRecordAllocs(t *testing.T) {
	var h hist
	if n := testing.AllocsPerRun(1000, func() { h.record(1234 * time.Nanosecond) }); n != 0 {
		t.Errorf("record allocates %v", n)
	}
}
