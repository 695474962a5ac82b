package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

func TestLoopSendRecv(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 4000))
	b := mustBind(t, st, ap(as[1], 5000))
	c := mustBind(t, st, ap(as[0], 4001)) // same node as a
	buf := make([]byte, 100)
	for i := range 10 {
		msg := []byte(fmt.Sprintf("hello %d", i))
		if n, err := a.SendTo(msg, ap(as[1], 5000), 0); err != nil || n != len(msg) {
			t.Fatalf("SendTo: %d %v", n, err)
		}
		n, from := recvTimeout(t, b, buf, time.Second)
		if !bytes.Equal(buf[:n], msg) || from != ap(as[0], 4000) {
			t.Fatalf("got %q from %v", buf[:n], from)
		}
	}
	if _, err := a.SendTo([]byte("self"), ap(as[0], 4001), 0); err != nil {
		t.Fatal(err)
	}
	n, from := recvTimeout(t, c, buf, time.Second)
	if string(buf[:n]) != "self" || from != ap(as[0], 4000) {
		t.Fatalf("self: %q %v", buf[:n], from)
	}
	if snd, rcv := a.Buffered(); snd != 0 || rcv != 0 {
		t.Errorf("buffered %d %d", snd, rcv)
	}
}
