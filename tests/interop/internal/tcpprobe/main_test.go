package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// peer accepts one connection on a loopback listener, reads want bytes and
// answers with reply; it returns the listener's address and a channel
// carrying what it read (or its error), closed when it is done.
func peer(t *testing.T, want int, reply []byte) (string, <-chan []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	t.Cleanup(func() { // the goroutine ends once got is closed
		for range got {
		}
	})
	go func() {
		defer close(got)
		defer ln.Close()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, want)
		if _, err := io.ReadFull(conn, buf); err != nil {
			return
		}
		got <- buf
		_, _ = conn.Write(reply)
	}()
	return ln.Addr().String(), got
}

func TestProbeExchange(t *testing.T) {
	addr, got := peer(t, 3, []byte{0xde, 0xad, 0xbe, 0xef, 0x99})
	var out bytes.Buffer
	if err := probe(&out, addr, "010203", 4, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if b := <-got; !bytes.Equal(b, []byte{1, 2, 3}) {
		t.Errorf("peer read %x, want 010203", b)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "local 127.0.0.1:") || lines[1] != "reply deadbeef" {
		t.Errorf("output %q, want local 127.0.0.1:* and exactly 4 reply bytes", out.String())
	}
}

func TestProbeShortReply(t *testing.T) {
	addr, got := peer(t, 1, []byte{0x42})
	var out bytes.Buffer
	err := probe(&out, addr, "00", 2, 5*time.Second)
	<-got
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if !strings.Contains(out.String(), "reply 42\n") {
		t.Errorf("output %q lacks the partial reply", out.String())
	}
}

func TestProbeBadHex(t *testing.T) {
	if err := probe(io.Discard, "127.0.0.1:1", "0g", 0, time.Second); err == nil {
		t.Error("probe accepted -send 0g")
	}
}
