package rdsoverdat

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
)

// A blocked RecvMsg and a sender blocked for SO_SNDBUF room are woken
// only when counted as waiting (reader.waiters, roomWaiters): a stream
// of messages through a buffer of a few of them makes both block again
// and again, so a wake-up lost between a waiter's count and its last
// look shows as a send or a receive that waits out its timeout.
func TestWaitersWokenThroughStream(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		leakCheck(t)
		streamThroughSmallBuffer(t, tcpStack(t))
	})
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		streamThroughSmallBuffer(t, datStack(t, cfg()))
	})
}

func streamThroughSmallBuffer(t *testing.T, st *Stack) {
	t.Helper()
	const (
		size  = 1 << 10
		count = 2000
		wait  = 30 * time.Second // only a lost wake-up comes near it
	)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(4*size), SendTimeout(wait))
	b := mustBind(t, st, ap(as[1], 0))
	got := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for i := range count {
			b.SetReadDeadline(time.Now().Add(wait))
			m := Msg{Data: buf}
			n, err := b.RecvMsg(&m, 0)
			if err == nil && (n != size || binary.LittleEndian.Uint32(buf) != uint32(i)) {
				err = fmt.Errorf("message %d: %d bytes, sequence %d", i, n, binary.LittleEndian.Uint32(buf))
			}
			if err != nil {
				got <- err
				return
			}
		}
		got <- nil
	}()
	msg := make([]byte, size)
	for i := range count {
		binary.LittleEndian.PutUint32(msg, uint32(i))
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			b.Close() // ends the receiver
			<-got
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := <-got; err != nil {
		t.Fatalf("receive: %v", err)
	}
}
