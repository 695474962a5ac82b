//go:build !race

package siw

// raceReleaseIO annotates writev for the race detector; see race.go.
func raceReleaseIO() {}

// raceAcquireIO annotates readv for the race detector; see race.go.
func raceAcquireIO(fd int) {}
