package dattest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The host's speed levels. On a shared or virtual host the CPU time of
// an iteration switches between levels that last from milliseconds to
// seconds, within one process and for both sides at once: on the KVM
// guest these benchmarks were written on, verbs' mem Send 64 B iteration
// costs ~430 ns in one level and 600-880 ns in the other, and DAT/verbs
// is 1.067-1.079 (quartiles over 54 runs) in the first and
// 1.108-1.126 in the second, nearer the ratio of the two sides'
// instruction counts: in the slow level an iteration costs about
// what its instructions cost, where in the fast one part of DAT's extra
// work runs beside verbs' latencies. The median over all blocks follows
// the share of blocks in the slow level, which changes from one process
// to the next; the median within each level moves much less. So
// BenchmarkDTOPaired also reports the ratio of each level (splitStates)
// and the share of the slow one.

// Limits of a split into two levels: each holds at least minStateShare
// of the block pairs and minStatePairs of them, and the slow level's
// median pair takes at least minStateGap times the fast one's. Below that
// the blocks are one level. The levels of the host above are 1.45-1.6x
// apart; within the slow one, verbs' CPU time still ranges over 1.3x
// (600-880 ns) from one process to the next, and a smaller gap, or a
// level of a few pairs (those in which the host changed levels), split
// off parts of one level: of 188 runs of rows, 27 of the 163 split with
// 1.2, 5 % and 10 pairs did not separate the fast level from the slow
// one, 2 of the 109 split with these limits.
const (
	minStateShare = 0.10
	minStatePairs = 20
	minStateGap   = 1.4
)

// splitStates finds whether the block pairs, whose CPU times (per
// iteration, both sides) are t, ran in two levels of the host's speed,
// and if so returns a cut between them: pairs under cut ran fast. It
// looks for the two groups that best separate log t (Otsu's criterion:
// the largest variance between them, each group of the size a level must
// have), and cuts halfway between their medians (in log t), so that a
// level smaller than that size, which Otsu's slow group would have
// filled up with pairs of the other, is counted as it is. The levels are
// those the cut leaves, if both are large enough and minStateGap apart.
func splitStates(t []float64) (cut float64, ok bool) {
	n := len(t)
	lo := max(int(math.Ceil(minStateShare*float64(n))), minStatePairs)
	if 2*lo > n {
		return 0, false
	}
	x := make([]float64, n)
	for i, v := range t {
		if v <= 0 {
			return 0, false
		}
		x[i] = math.Log(v)
	}
	slices.Sort(x)
	var total float64
	for _, v := range x {
		total += v
	}
	best, at := -1.0, 0
	var left float64
	for i := 1; i < n; i++ { // x[:i] fast, x[i:] slow
		left += x[i-1]
		if i < lo || n-i < lo {
			continue
		}
		m0, m1 := left/float64(i), (total-left)/float64(n-i)
		if v := float64(i) * float64(n-i) * (m1 - m0) * (m1 - m0); v > best {
			best, at = v, i
		}
	}
	if best < 0 {
		return 0, false
	}
	m0, m1 := x[at/2], x[at+(n-at)/2]
	mid := (m0 + m1) / 2
	k, _ := slices.BinarySearch(x, mid)
	if math.Exp(m1-m0) < minStateGap || k < lo || n-k < lo {
		return 0, false
	}
	return math.Exp(mid), true
}

func TestSplitStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	level := func(n int, at, jitter float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = at * (1 + jitter*(2*rng.Float64()-1))
		}
		return x
	}
	for _, tc := range []struct {
		name     string
		fast     []float64
		slow     []float64
		wantCut  bool
		wantFast int // pairs under the cut
	}{
		{"two levels", level(200, 900, 0.03), level(100, 1400, 0.04), true, 200},
		{"slow level a tenth", level(270, 900, 0.03), level(30, 1400, 0.04), true, 270},
		{"fast level a tenth", level(30, 900, 0.03), level(270, 1400, 0.04), true, 30},
		{"slow level under a tenth", level(275, 900, 0.03), level(25, 1400, 0.04), false, 0},
		{"fast level under a tenth", level(25, 900, 0.03), level(275, 1400, 0.04), false, 0},
		{"one level", level(300, 900, 0.05), nil, false, 0},
		{"levels too close", level(150, 900, 0.02), level(150, 1000, 0.02), false, 0},
		{"too few pairs", level(5, 900, 0.01), level(5, 1400, 0.01), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := append(slices.Clone(tc.fast), tc.slow...)
			rng.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
			cut, ok := splitStates(x)
			if ok != tc.wantCut {
				t.Fatalf("split %v, want %v (cut %.0f)", ok, tc.wantCut, cut)
			}
			if !ok {
				return
			}
			under := 0
			for _, v := range x {
				if v < cut {
					under++
				}
			}
			if under != tc.wantFast {
				t.Fatalf("cut %.0f leaves %d pairs fast, want %d", cut, under, tc.wantFast)
			}
		})
	}
}
