package rdsoverdat

import (
	"bytes"
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// A blocking send to a congested port waits until the receiver reads
// and then goes through, where a non-blocking one gets ENOBUFS (rds(7)).
// Not in the TestBackend set: the kernel's loopback transport, which
// carries local addresses, keeps no congestion, so the kernel half could
// never congest; its blocking send (kernel_cong.go) is what
// tests/rdsib/bench.sh exercises with BUF=212992, where the kernel's
// sockets congest between two VMs.
func TestCongestedSendBlocks(t *testing.T) {
	congestedSendBlocks := func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0), RecvBuffer(4096))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		msg := bytes.Repeat([]byte{1}, 1024)
		sent := 0
		for {
			_, err := a.SendTo(msg, b.BoundAddr(), MsgDontWait)
			if errors.Is(err, syscall.ENOBUFS) {
				break
			}
			if errors.Is(err, syscall.EAGAIN) {
				if _, err := a.Wait(ctx, PollOut); err != nil {
					t.Fatalf("waiting for room after %d messages: %v", sent, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("send %d: %v", sent, err)
			}
			if sent++; sent > 100000 {
				t.Fatal("the port never became congested")
			}
		}
		done := make(chan error, 1)
		go func() {
			_, err := a.SendTo([]byte("after"), b.BoundAddr(), 0)
			done <- err
		}()
		m := Msg{Data: make([]byte, 2048)}
		for got := 0; ; got++ {
			if err := b.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			n, err := b.RecvMsg(&m, 0)
			if err != nil {
				t.Fatalf("receive %d of %d sent: %v (blocked send: %v)", got, sent, err, pending(done))
			}
			if string(m.Data[:n]) == "after" {
				if got != sent {
					t.Fatalf("the blocked send arrived after %d of %d messages", got, sent)
				}
				break
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("blocking send to a congested port: %v", err)
		}
	}
	t.Run("rdsoverdat", func(t *testing.T) {
		leakCheck(t)
		congestedSendBlocks(t, newTestStack(t, Config{}))
	})
	t.Run("daemon", func(t *testing.T) {
		leakCheck(t)
		st, _ := daemonStack(t, Config{})
		congestedSendBlocks(t, st)
	})
}

// pending returns what c holds, or "still blocked".
func pending(c <-chan error) any {
	select {
	case err := <-c:
		return err
	default:
		return "still blocked"
	}
}
