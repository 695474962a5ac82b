//go:build !race

package siw

// raceReleaseIO annotates writev for the race detector; see race.go.
func raceReleaseIO() {}
