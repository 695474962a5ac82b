package main

import (
	"fmt"
	"strconv"
	"strings"
)

// An op is one step of a transaction (dapltest -T T) or the operation of
// a performance test (-T P), written as dapltest writes them:
//
//	transaction:  client|server RR|RW|SR [seg_size [num_segs]] [-f]
//	performance:  RR|RW [seg_size [num_segs]]    (SR too: a Send the server echoes)
//
// RR is an RDMA Read, RW an RDMA Write, SR a Send and its Receive.
type op struct {
	server  bool   // initiated by the server
	kind    string // "RR", "RW" or "SR"
	segSize int    // bytes per segment (dapltest's default 4096)
	segs    int    // segments (IOV entries) per operation (default 1)
	reap    bool   // -f: reap the Send's completion with the Receive's
}

// bytes is the operation's length.
func (o op) bytes() int { return o.segSize * o.segs }

func (o op) String() string {
	who := "client"
	if o.server {
		who = "server"
	}
	return fmt.Sprintf("%s %s %d %d", who, o.kind, o.segSize, o.segs)
}

// defaultTxnOps is the transaction when none is given: RDMA Write a
// pattern into the server's region, RDMA Read it back and compare, and
// a Send the server echoes, each of size bytes.
func defaultTxnOps(size int) []op {
	return []op{
		{kind: "RW", segSize: size, segs: 1},
		{kind: "RR", segSize: size, segs: 1},
		{kind: "SR", segSize: size, segs: 1},
		{server: true, kind: "SR", segSize: size, segs: 1},
	}
}

// parseTxnOps reads a transaction's positional operation list: each op
// starts with "client" or "server", as dapltest gathers them.
func parseTxnOps(args []string, defSize int) ([]op, error) {
	var ops []op
	for len(args) > 0 {
		end := 1
		for end < len(args) && args[end] != "client" && args[end] != "server" {
			end++
		}
		o, err := parseOp(args[:end], true, defSize)
		if err != nil {
			return nil, err
		}
		ops = append(ops, o)
		args = args[end:]
	}
	return ops, checkTxnOps(ops)
}

// parseOp reads one op's words; withWho says whether it starts with
// client or server.
func parseOp(w []string, withWho bool, defSize int) (op, error) {
	text := strings.Join(w, " ")
	o := op{segSize: defSize, segs: 1}
	if withWho {
		switch w[0] {
		case "client":
		case "server":
			o.server = true
		default:
			return o, fmt.Errorf("op %q: the first word must be client or server", text)
		}
		w = w[1:]
	}
	if len(w) == 0 {
		return o, fmt.Errorf("op %q: missing RR, RW or SR", text)
	}
	switch w[0] {
	case "RR", "RW", "SR":
		o.kind = w[0]
	default:
		return o, fmt.Errorf("op %q: %q is not RR, RW or SR", text, w[0])
	}
	w = w[1:]
	for i, dst := range []*int{&o.segSize, &o.segs} {
		if len(w) == 0 || w[0] == "-f" {
			break
		}
		n, err := strconv.Atoi(w[0])
		if err != nil || n < 1 {
			return o, fmt.Errorf("op %q: %q is not a %s", text, w[0], [...]string{"segment size", "segment count"}[i])
		}
		*dst = n
		w = w[1:]
	}
	if len(w) > 0 && w[0] == "-f" && withWho {
		if o.kind != "SR" {
			return o, fmt.Errorf("op %q: -f only goes with SR", text)
		}
		o.reap = true
		w = w[1:]
	}
	if len(w) > 0 {
		return o, fmt.Errorf("op %q: too many words", text)
	}
	if o.bytes() > maxMsgSize || o.segs > maxSegs {
		return o, fmt.Errorf("op %q: at most %d bytes in at most %d segments", text, maxMsgSize, maxSegs)
	}
	return o, nil
}

// maxSegs bounds num_segs (the EP's IOV length).
const maxSegs = 16

// checkTxnOps checks what the dattest server can play: it exposes its
// memory and echoes every message, so it initiates no RDMA, and each
// "server SR" is the echo of a "client SR" before it, of the same size.
func checkTxnOps(ops []op) error {
	pending := []op{}
	for _, o := range ops {
		switch {
		case o.server && o.kind != "SR":
			return fmt.Errorf("op %q: the dattest server initiates no RDMA (it exposes its memory and echoes Sends); "+
				"use client %s", o, o.kind)
		case o.server:
			if len(pending) == 0 {
				return fmt.Errorf("op %q: a server SR here is the echo of a client SR before it", o)
			}
			if c := pending[0]; c.bytes() != o.bytes() {
				return fmt.Errorf("op %q: the server echoes the %d bytes of %q", o, c.bytes(), c)
			}
			pending = pending[1:]
		case o.kind == "SR":
			pending = append(pending, o)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("op %q has no server SR: the server answers each client Send with one", pending[0])
	}
	if len(ops) == 0 {
		return fmt.Errorf("no operations")
	}
	return nil
}
