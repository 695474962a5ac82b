package shmring

import (
	"sync"
	"testing"
)

// The consumer's count reaches the producer, and a producer that asked
// to be told is told once per request.
func TestAck(t *testing.T) {
	a, b := pair(t, MinCapacity)
	if got := a.Ack(); got != 0 {
		t.Fatalf("fresh ring's ack %d, want 0", got)
	}
	if b.PublishAck(5) {
		t.Fatal("told without a request")
	}
	if got := a.Ack(); got != 5 {
		t.Fatalf("ack %d, want 5", got)
	}
	a.WantAck(true)
	if !b.PublishAck(7) {
		t.Fatal("not told with a request")
	}
	if b.PublishAck(8) {
		t.Fatal("told twice for one request")
	}
	a.WantAck(true)
	a.WantAck(false)
	if b.PublishAck(9) {
		t.Fatal("told after the request was withdrawn")
	}
	if got := a.Ack(); got != 9 {
		t.Fatalf("ack %d, want 9", got)
	}
	a.Close()
	if got := a.Ack(); got != 0 {
		t.Fatalf("closed end's ack %d, want 0", got)
	}
}

// A producer that sets the flag and then reads the count never misses a
// count published concurrently: either its read sees the count or the
// consumer sees the flag.
func TestAckNoMiss(t *testing.T) {
	a, b := pair(t, MinCapacity)
	const rounds = 2000
	for i := uint64(1); i <= rounds; i++ {
		var told bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			told = b.PublishAck(i)
		}()
		a.WantAck(true)
		seen := a.Ack() == i
		wg.Wait()
		if !seen && !told {
			t.Fatalf("round %d: count neither seen nor told", i)
		}
		a.WantAck(false)
	}
}
