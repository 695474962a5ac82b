package shmring

import (
	"context"
	"errors"
	"testing"
	"time"
)

// result runs fn in a goroutine and returns a channel with its error.
func result(fn func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- fn() }()
	return c
}

// await fails the test if c yields nothing for a long time: a guard
// against a hang, not a measure of promptness under load.
func await(t *testing.T, c <-chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(time.Minute):
		t.Fatal("blocked call did not return")
		return nil
	}
}

func consSleeping(r *Ring) func() uint32 { return r.sh.consWait.Load }
func prodSleeping(r *Ring) func() uint32 { return r.sh.prodWait.Load }

// fill writes records until the ring is full.
func fill(r *Ring) {
	for r.TryWrite(make([]byte, 100)) {
	}
}

func TestPeerCloseWakesConsumer(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	c := result(func() error { _, err := cons.Read(context.Background(), make([]byte, 10)); return err })
	untilSleeping(t, consSleeping(cons), c)
	prod.Close()
	if err := await(t, c); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Read: %v, want ErrPeerClosed", err)
	}
}

func TestPeerCloseWakesProducer(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	fill(prod)
	c := result(func() error { return prod.Write(context.Background(), make([]byte, 100)) })
	untilSleeping(t, prodSleeping(prod), c)
	cons.Close()
	if err := await(t, c); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Write: %v, want ErrPeerClosed", err)
	}
}

// Close of this end wakes this end's blocked calls with ErrClosed, and
// later calls fail the same way.
func TestLocalCloseWakes(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	c := result(func() error { _, err := cons.Peek(context.Background()); return err })
	untilSleeping(t, consSleeping(cons), c)
	if err := cons.Close(); err != nil {
		t.Fatal(err)
	}
	if err := await(t, c); !errors.Is(err, ErrClosed) {
		t.Fatalf("Peek: %v, want ErrClosed", err)
	}
	if err := cons.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := cons.Read(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, ok := cons.TryRead(nil); ok {
		t.Fatal("TryRead after Close succeeded")
	}
	prod, _ = pair(t, MinCapacity)
	fill(prod)
	w := result(func() error { return prod.Write(context.Background(), make([]byte, 100)) })
	untilSleeping(t, prodSleeping(prod), w)
	prod.Close()
	if err := await(t, w); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write: %v, want ErrClosed", err)
	}
}

// Records committed before the producer closed are all read, then
// ErrPeerClosed.
func TestDrainAfterPeerClose(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()
	for i := range 3 {
		if err := prod.Write(ctx, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	prod.Close()
	buf := make([]byte, 1)
	for i := range 3 {
		if n, err := cons.Read(ctx, buf); err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("record %d: %d %v", i, n, err)
		}
	}
	if _, err := cons.Read(ctx, buf); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Read: %v, want ErrPeerClosed", err)
	}
	if err := cons.Write(ctx, buf); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Write to a closed peer: %v", err)
	}
}

// Shutdown, for a peer that died without closing, ends blocked calls on
// both ends of this side.
func TestShutdown(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	r := result(func() error { _, err := cons.Read(context.Background(), nil); return err })
	untilSleeping(t, consSleeping(cons), r)
	cons.Shutdown()
	if err := await(t, r); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Read: %v, want ErrPeerClosed", err)
	}
	fill(prod)
	w := result(func() error { return prod.Write(context.Background(), make([]byte, 100)) })
	untilSleeping(t, prodSleeping(prod), w)
	prod.Shutdown()
	prod.Shutdown()
	if err := await(t, w); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("Write: %v, want ErrPeerClosed", err)
	}
}

// A context's end stops the wait and leaves the ring usable.
func TestContextCancel(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx, cancel := context.WithCancel(context.Background())
	r := result(func() error { _, err := cons.Read(ctx, nil); return err })
	untilSleeping(t, consSleeping(cons), r)
	cancel()
	if err := await(t, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read: %v, want context.Canceled", err)
	}
	fill(prod)
	ctx, cancel = context.WithCancel(context.Background())
	w := result(func() error { return prod.Write(ctx, make([]byte, 100)) })
	untilSleeping(t, prodSleeping(prod), w)
	cancel()
	if err := await(t, w); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write: %v, want context.Canceled", err)
	}
	if _, err := cons.Read(context.Background(), make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := prod.Write(context.Background(), make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := prod.Write(done, make([]byte, 100)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a full ring and an ended context: %v", err)
	}
}

// The producer writes the eventfd only for a consumer that announced its
// sleep, and once per sleep.
func TestSignalOnlySleepers(t *testing.T) {
	prod, cons := pair(t, 1<<16)
	ctx := context.Background()
	rec := make([]byte, 64)
	for range 500 {
		if !prod.TryWrite(rec) {
			t.Fatal("ring full")
		}
	}
	buf := make([]byte, 64)
	for range 500 {
		if _, err := cons.Read(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
	if s, c := prod.Stats(), cons.Stats(); s.Signals != 0 || c.Signals != 0 || c.Sleeps != 0 {
		t.Fatalf("no one slept, yet stats producer %+v consumer %+v", s, c)
	}
	r := result(func() error { _, err := cons.Read(ctx, buf); return err })
	untilSleeping(t, consSleeping(cons), r)
	for range 100 {
		if !prod.TryWrite(rec) {
			t.Fatal("ring full")
		}
	}
	if err := await(t, r); err != nil {
		t.Fatal(err)
	}
	if s := prod.Stats(); s.Signals != 1 {
		t.Fatalf("%d signals for one sleep", s.Signals)
	}
	for range 99 {
		if _, err := cons.Read(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
	if s := cons.Stats(); s.Signals != 0 {
		t.Fatalf("consumer signalled a producer that never slept: %+v", s)
	}
}

// A sleeping producer is woken once half the ring is free (more than
// its record needs), not for every record read before that, and once.
func TestProducerWokenAtHalfRing(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	small := make([]byte, 56) // 64 bytes with the header
	for prod.TryWrite(small) {
	}
	big := make([]byte, 1000) // 1008 bytes with the header, under half
	w := result(func() error { return prod.Write(context.Background(), big) })
	untilSleeping(t, prodSleeping(prod), w)
	// Room freed by reads alone: the woken producer writes meanwhile.
	wpos := cons.sh.wpos.Load()
	free := func() uint64 { return cons.cap - (wpos - cons.rpos) }
	buf := make([]byte, 64)
	for free() < cons.cap/2 {
		if s := cons.Stats(); s.Signals != 0 {
			t.Fatalf("producer woken with %d bytes free of %d", free(), cons.cap)
		}
		if _, ok := cons.TryRead(buf); !ok {
			t.Fatal("TryRead")
		}
	}
	if err := await(t, w); err != nil {
		t.Fatal(err)
	}
	if s := cons.Stats(); s.Signals != 1 {
		t.Fatalf("%d wake-ups, want 1", s.Signals)
	}
}

// A producer waiting for a record larger than half the ring is woken
// once it fits.
func TestProducerWokenWhenLargeRecordFits(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	small := make([]byte, 56)
	for prod.TryWrite(small) {
	}
	big := make([]byte, prod.MaxRecord())
	w := result(func() error { return prod.Write(context.Background(), big) })
	untilSleeping(t, prodSleeping(prod), w)
	buf := make([]byte, 64)
	for {
		if _, ok := cons.TryRead(buf); !ok {
			t.Fatal("TryRead: the ring emptied and the producer still sleeps")
		}
		if cons.Stats().Signals != 0 {
			break
		}
	}
	if err := await(t, w); err != nil {
		t.Fatal(err)
	}
}

// A reserved or peeked slice stays mapped across Close until Commit or
// Release, which then fail or do nothing, and unmap: a writer copying
// into its reservation while another goroutine closes the ring must not
// fault.
func TestCloseKeepsHeldSlices(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()
	b, err := prod.Reserve(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Reserve(ctx, 50); err != nil { // replaces it
		t.Fatal(err)
	}
	if err := prod.Write(ctx, []byte("before")); err != nil { // and this too
		t.Fatal(err)
	}
	if b, err = prod.Reserve(ctx, 100); err != nil {
		t.Fatal(err)
	}
	rec, err := cons.Peek(ctx)
	if err != nil || string(rec) != "before" {
		t.Fatalf("Peek: %q %v", rec, err)
	}
	if again, ok := cons.TryPeek(); !ok || &again[0] != &rec[0] {
		t.Fatal("TryPeek moved on")
	}
	prod.Close()
	cons.Close()
	copy(b, "after Close") // faults if unmapped
	if string(rec) != "before" {
		t.Fatalf("peeked record reads %q after Close", rec)
	}
	if prod.mem == nil || cons.mem == nil {
		t.Fatal("unmapped while a slice is held")
	}
	if err := prod.Commit(11); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	cons.Release()
	if prod.refs.Load() != refsDead || cons.refs.Load() != refsDead {
		t.Fatalf("references left: producer %d consumer %d", prod.refs.Load(), cons.refs.Load())
	}
}

// Release without a Peek does nothing, even after a TryRead that found
// its buffer too short.
func TestReleaseWithoutPeek(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	if !prod.TryWrite([]byte("kept")) {
		t.Fatal("TryWrite")
	}
	if _, ok := cons.TryRead(make([]byte, 2)); ok {
		t.Fatal("TryRead into a short buffer")
	}
	cons.Release()
	buf := make([]byte, 4)
	if n, ok := cons.TryRead(buf); !ok || string(buf[:n]) != "kept" {
		t.Fatalf("record lost: %q %v", buf[:n], ok)
	}
	if cons.refs.Load() != 1 || prod.refs.Load() != 1 {
		t.Fatalf("references: producer %d consumer %d, want 1", prod.refs.Load(), cons.refs.Load())
	}
}
