package faults

import (
	"math/rand/v2"
	"sync"
)

// The hostile-peer scenarios (hostile_rds_test.go, hostile_siw_test.go)
// share one attack loop: every attack, round after round, a few at once,
// each run with its own reproducible randomness.

// attackersAtOnce bounds the hostile connections open at once.
const attackersAtOnce = 8

// attackLoop runs each of attacks rounds times, at most attackersAtOnce
// runs at once, and returns every run's outcome grouped by attack:
// outcomes[i] are those of attacks[i]. Run n (0, 1, ... across all rounds;
// a run can use it to pick its own source address) of attack i in round
// r gets a rand.Rand seeded with (r, i), so a run that failed can be
// replayed alone.
func attackLoop[A, O any](rounds int, attacks []A, run func(n int, at A, r *rand.Rand) O) [][]O {
	outcomes := make([][]O, len(attacks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, attackersAtOnce)
	n := 0
	for round := range rounds {
		for i, at := range attacks {
			wg.Add(1)
			sem <- struct{}{}
			go func(n int) {
				defer wg.Done()
				defer func() { <-sem }()
				o := run(n, at, rand.New(rand.NewPCG(uint64(round), uint64(i))))
				mu.Lock()
				outcomes[i] = append(outcomes[i], o)
				mu.Unlock()
			}(n)
			n++
		}
	}
	wg.Wait()
	return outcomes
}
