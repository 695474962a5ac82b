//go:build !race

package rdsoverdat

const raceEnabled = false
