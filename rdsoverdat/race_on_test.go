//go:build race

package rdsoverdat

// sync.Pool drops items at random under the race detector, so the
// allocation guards only run without it.
const raceEnabled = true
