package shmring

import (
	"os"
	"runtime"
	"testing"
)

// pair returns the two ends of a ring of the given capacity in this
// process: the creator produces, an end attached from duplicates of its
// files consumes, through a second mapping as a peer process would.
func pair(t testing.TB, capacity int) (prod, cons *Ring) {
	t.Helper()
	prod, err := Create(capacity)
	if err != nil {
		t.Fatal(err)
	}
	files := make([]*os.File, 0, 3)
	for _, f := range prod.Files() {
		d, err := dupFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, d)
	}
	cons, err = Attach(files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		prod.Close()
		cons.Close()
	})
	return prod, cons
}

// untilSleeping yields until a ring end has announced that it sleeps
// (flag): state polled, not time waited. The call that should sleep
// reports on c; its returning first fails the test.
func untilSleeping(t testing.TB, flag func() uint32, c <-chan error) {
	t.Helper()
	for flag() == 0 {
		select {
		case err := <-c:
			t.Fatalf("returned instead of sleeping: %v", err)
		default:
		}
		runtime.Gosched()
	}
}

// pattern fills b with bytes derived from seq, for checks that no byte
// went astray.
func pattern(b []byte, seq uint64) {
	x := seq*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

func checkPattern(t testing.TB, b []byte, seq uint64) {
	t.Helper()
	want := make([]byte, len(b))
	pattern(want, seq)
	if string(b) != string(want) {
		t.Fatalf("record %d: %d bytes differ from what was written", seq, len(b))
	}
}
