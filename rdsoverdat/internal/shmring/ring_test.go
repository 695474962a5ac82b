package shmring

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// A stream of records of every size class through a small ring, so
// that it wraps (padding records), fills (the producer sleeps) and
// empties (the consumer sleeps) many times; every byte is checked.
func TestStream(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	const count = 20000
	sizes := make([]int, count)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range sizes {
		switch i % 4 {
		case 0:
			sizes[i] = rng.IntN(16)
		case 1:
			sizes[i] = rng.IntN(200)
		case 2:
			sizes[i] = rng.IntN(prod.MaxRecord() + 1)
		default:
			sizes[i] = prod.MaxRecord() - rng.IntN(8)
		}
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	go func() {
		defer wg.Done()
		buf := make([]byte, prod.MaxRecord())
		for i, n := range sizes {
			pattern(buf[:n], uint64(i))
			if err := prod.Write(ctx, buf[:n]); err != nil {
				errc <- err
				return
			}
		}
		errc <- prod.Close()
	}()
	buf := make([]byte, cons.MaxRecord())
	for i, want := range sizes {
		n, err := cons.Read(ctx, buf)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if n != want {
			t.Fatalf("record %d: %d bytes, want %d", i, n, want)
		}
		checkPattern(t, buf[:n], uint64(i))
	}
	if _, err := cons.Read(ctx, buf); !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("read after the producer closed: %v, want ErrPeerClosed", err)
	}
	wg.Wait()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// Try calls fill the ring to the byte and make room one record at a
// time.
func TestTryFull(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	rec := make([]byte, 56) // 64 bytes with the header
	n := 0
	for prod.TryWrite(rec) {
		n++
	}
	if n != MinCapacity/64 {
		t.Fatalf("%d records of 64 bytes in a ring of %d", n, MinCapacity)
	}
	if _, ok := cons.TryRead(make([]byte, 10)); ok {
		t.Fatal("TryRead into a short buffer succeeded")
	}
	buf := make([]byte, 100)
	if got, ok := cons.TryRead(buf); !ok || got != 56 {
		t.Fatalf("TryRead: %d %v", got, ok)
	}
	if !prod.TryWrite(rec) {
		t.Fatal("no room after a read")
	}
	if prod.TryWrite(rec) {
		t.Fatal("room for two after one read")
	}
	for range n {
		if _, ok := cons.TryRead(buf); !ok {
			t.Fatal("record missing")
		}
	}
	if _, ok := cons.TryRead(buf); ok {
		t.Fatal("record too many")
	}
}

// The largest record fits an empty ring wherever the indexes stand; one
// byte more is refused with ErrTooLarge.
func TestMaxRecord(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()
	big := make([]byte, prod.MaxRecord())
	buf := make([]byte, prod.MaxRecord())
	for shift := 0; shift < MinCapacity; shift += 8 {
		if shift > 0 {
			// Move the indexes on by 8 bytes: one empty record.
			if err := prod.Write(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if n, err := cons.Read(ctx, buf); err != nil || n != 0 {
				t.Fatalf("empty record: %d %v", n, err)
			}
		}
		pattern(big, uint64(shift))
		if !prod.TryWrite(big) {
			t.Fatalf("largest record refused at index %d", shift)
		}
		n, err := cons.Read(ctx, buf)
		if err != nil || n != len(big) {
			t.Fatalf("at index %d: %d %v", shift, n, err)
		}
		checkPattern(t, buf, uint64(shift))
	}
	if err := prod.Write(ctx, make([]byte, prod.MaxRecord()+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Write beyond MaxRecord: %v", err)
	}
	if _, err := prod.Reserve(ctx, prod.MaxRecord()+1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Reserve beyond MaxRecord: %v", err)
	}
	if prod.TryWrite(make([]byte, prod.MaxRecord()+1)) {
		t.Fatal("TryWrite beyond MaxRecord succeeded")
	}
}

// A record longer than the buffer stays in the ring, and Read says how
// long it is.
func TestShortBuffer(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()
	if err := prod.Write(ctx, []byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	n, err := cons.Read(ctx, make([]byte, 5))
	if !errors.Is(err, ErrShortBuffer) || n != 12 {
		t.Fatalf("short read: %d %v", n, err)
	}
	buf := make([]byte, n)
	if n, err := cons.Read(ctx, buf); err != nil || string(buf[:n]) != "hello, world" {
		t.Fatalf("read: %q %v", buf[:n], err)
	}
}

func TestCreateCapacity(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{1, MinCapacity}, {MinCapacity, MinCapacity}, {MinCapacity + 1, 2 * MinCapacity}, {1 << 20, 1 << 20},
	} {
		r, err := Create(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if r.Capacity() != c.want || r.MaxRecord() != c.want/2-8 {
			t.Errorf("Create(%d): capacity %d max record %d", c.in, r.Capacity(), r.MaxRecord())
		}
		r.Close()
	}
	for _, c := range []int{0, -1, MaxCapacity + 1} {
		if _, err := Create(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%d): %v, want ErrInvalid", c, err)
		}
	}
}

// Reserve and Commit write in place; Peek and Release read in place.
func TestReserveCommitPeek(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	ctx := context.Background()
	if err := prod.Commit(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Commit without Reserve: %v", err)
	}
	b, err := prod.Reserve(ctx, 100)
	if err != nil || len(b) != 100 {
		t.Fatalf("Reserve: %d %v", len(b), err)
	}
	copy(b, "in place")
	if _, ok := cons.TryPeek(); ok {
		t.Fatal("a reservation is visible before Commit")
	}
	if err := prod.Commit(101); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Commit beyond the reservation: %v", err)
	}
	if err := prod.Commit(8); err != nil {
		t.Fatal(err)
	}
	rec, err := cons.Peek(ctx)
	if err != nil || string(rec) != "in place" {
		t.Fatalf("Peek: %q %v", rec, err)
	}
	again, ok := cons.TryPeek()
	if !ok || !bytes.Equal(again, rec) {
		t.Fatal("a second Peek moved on")
	}
	cons.Release()
	if _, ok := cons.TryPeek(); ok {
		t.Fatal("record still there after Release")
	}
	cons.Release() // nothing peeked: no effect
	if err := prod.Write(ctx, []byte("next")); err != nil {
		t.Fatal(err)
	}
	if rec, err := cons.Peek(ctx); err != nil || string(rec) != "next" {
		t.Fatalf("Peek after Release: %q %v", rec, err)
	}
}
