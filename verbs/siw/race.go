//go:build race

package siw

import "syscall"

// raceReleaseIO tells the race detector that what the caller did so far
// happens before anything that reads the bytes it is about to write.
//
// syscall.Read and syscall.Write carry that annotation (a release on a
// global before every write, an acquire after every read), but the writev
// behind net.Buffers does not, so without it a same-process peer that
// learns over TCP that a buffer has been sent — an RDMA Read completes,
// its memory is reused — looks like a race. A zero-length write to fd -1
// performs the release and fails harmlessly. Only race builds do this.
func raceReleaseIO() { syscall.Write(-1, nil) }

// raceAcquireIO is the read side of raceReleaseIO, for data read with a
// raw readv: a zero-length syscall.Read on the socket returns at once
// and performs the acquire.
func raceAcquireIO(fd int) { syscall.Read(fd, nil) }
