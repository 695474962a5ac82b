package shmring

import (
	"context"
	"testing"
)

// The netpoller forgets an eventfd write made before a wait armed it,
// so a wait's first look asks the waiting flag: a signal whose writer
// took the flag before the wait began ends the wait, on either
// eventfd, as a peer's Close does; a flag still set makes it sleep
// until the next write. Without the look each case below hangs.
func TestSignalBeforeWait(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()

	cons.sh.consWait.Store(1)
	if !cons.sh.consWait.CompareAndSwap(1, 0) { // a producer's commit
		t.Fatal("flag not set")
	}
	prod.dataEv.signal()
	if err := await(t, result(func() error { return cons.dataEv.wait(ctx) })); err != nil {
		t.Fatal(err)
	}

	prod.sh.prodWait.Store(64)
	if !prod.sh.prodWait.CompareAndSwap(64, 0) { // a consumer's release
		t.Fatal("flag not set")
	}
	cons.spaceEv.signal()
	if err := await(t, result(func() error { return prod.spaceEv.wait(ctx) })); err != nil {
		t.Fatal(err)
	}

	cons.sh.consWait.Store(1)
	prod.dataEv.signal() // an event left from an earlier sleep, flag not taken
	woke := result(func() error { return cons.dataEv.wait(ctx) })
	cons.sh.consWait.Store(0) // the signal for this sleep
	prod.dataEv.signal()
	if err := await(t, woke); err != nil {
		t.Fatal(err)
	}

	cons.sh.consWait.Store(1)
	prod.Close() // takes the flags
	if err := await(t, result(func() error { return cons.dataEv.wait(ctx) })); err != nil {
		t.Fatal(err)
	}
	prod, cons = pair(t, MinCapacity)
	prod.sh.prodWait.Store(64)
	cons.Close()
	if err := await(t, result(func() error { return prod.spaceEv.wait(ctx) })); err != nil {
		t.Fatal(err)
	}
}
