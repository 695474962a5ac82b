package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/godapl/godapl/verbs"
)

// Params of a client run.
type Params struct {
	Test     Test
	Size     int           // message size in bytes
	Depth    int           // outstanding requests (write) or receives the server posts (send)
	Duration time.Duration // how long to run (0 with Iters: no time limit)
	// Iters, if not 0, ends the test after that many messages (perftest's
	// -n), or at Duration if that comes first.
	Iters uint64
}

// more reports whether a test that started at start and has n messages
// out may send another.
func (p Params) more(start time.Time, n uint64) bool {
	if p.Iters > 0 && n >= p.Iters {
		return false
	}
	return (p.Iters > 0 && p.Duration == 0) || time.Since(start) < p.Duration
}

// left bounds a batch of k messages by what Iters leaves after n.
func (p Params) left(k int, n uint64) int {
	if p.Iters == 0 {
		return k
	}
	return int(min(uint64(k), p.Iters-min(n, p.Iters)))
}

// Run connects to a Server at addr through dev and runs one test.
func Run(ctx context.Context, dev verbs.Device, addr string, p Params) (*Result, error) {
	if p.Size <= 0 || p.Size > MaxSize || p.Depth <= 0 || p.Depth > maxDepth {
		return nil, fmt.Errorf("perf: bad parameters %+v", p)
	}
	if p.Test == TestPingPong {
		p.Depth = 1
	}
	var bufSize, sq, rq int
	switch p.Test {
	case TestWrite:
		bufSize, sq, rq = p.Size, p.Depth+1, 1
	case TestSendRate:
		bufSize, sq, rq = p.Size+p.Depth*creditLen, p.Depth, p.Depth
	case TestPingPong:
		bufSize, sq, rq = 2*p.Size, 16, 1
	default:
		return nil, fmt.Errorf("perf: unknown test %d", p.Test)
	}
	e, err := newEndpoint(dev, bufSize, sq, rq)
	if err != nil {
		return nil, err
	}
	defer e.close()
	switch p.Test {
	case TestSendRate:
		for i := 0; i < p.Depth; i++ {
			if err := e.queueCreditRecv(p.Size, i); err != nil {
				return nil, err
			}
		}
		if err := e.postRecvs(); err != nil {
			return nil, err
		}
	case TestPingPong:
		if err := e.postRecvSlot(1, p.Size); err != nil {
			return nil, err
		}
	}
	var pd [requestLen]byte
	req := request{test: p.Test, size: uint32(p.Size), depth: uint32(p.Depth)}
	e.conn, err = dev.Connect(ctx, e.qp, addr, verbs.ConnParam{PrivateData: req.append(pd[:0])})
	if err != nil {
		return nil, err
	}
	rep, err := parseReply(e.conn.PrivateData())
	if err != nil {
		return nil, err
	}
	ctx, cancel := ctxUntilDone(ctx, e.conn)
	defer cancel()
	switch p.Test {
	case TestWrite:
		return e.runWrite(ctx, p, rep)
	case TestSendRate:
		return e.runSendRate(ctx, p)
	default:
		return e.runPingPong(ctx, p)
	}
}

// runWrite keeps Depth RDMA Writes in flight for Duration, signalling one
// in every sig, then reads one byte back: the Read Response follows every
// earlier Write on the stream, so when it arrives all data has been placed.
func (e *endpoint) runWrite(ctx context.Context, p Params, rep reply) (*Result, error) {
	if uint32(p.Size) > rep.size {
		return nil, fmt.Errorf("perf: server buffer %d < size %d", rep.size, p.Size)
	}
	sig := max(1, p.Depth/4)
	sgl := [1]verbs.SGE{e.sge(0, p.Size)}
	wr := [1]verbs.SendWR{{Opcode: verbs.OpRDMAWrite, SGL: sgl[:], RemoteAddr: rep.addr, RKey: rep.rkey}}
	var posted, done uint64
	start := time.Now()
	for p.more(start, posted) {
		for posted-done < uint64(p.Depth) && p.left(1, posted) > 0 {
			wr[0].ID = posted
			wr[0].Flags = 0
			// The last Write of an Iters run is signalled: nothing may
			// be left that only an unsignalled completion would retire.
			if (posted+1)%uint64(sig) == 0 || posted+1 == p.Iters {
				wr[0].Flags = verbs.SendSignaled
			}
			if _, err := e.qp.PostSend(wr[:]); err != nil {
				return nil, err
			}
			posted++
		}
		n, err := e.poll(ctx, e.scq)
		if err != nil {
			return nil, err
		}
		if err := e.checkWCs(n); err != nil {
			return nil, err
		}
		done = e.wcs[n-1].ID + 1
	}
	// Drain: the unsignalled tail needs one signalled request to retire it.
	rsgl := [1]verbs.SGE{e.sge(0, 1)}
	rd := [1]verbs.SendWR{{ID: ^uint64(0), Opcode: verbs.OpRDMARead, SGL: rsgl[:], RemoteAddr: rep.addr, RKey: rep.rkey, Flags: verbs.SendSignaled}}
	if _, err := e.qp.PostSend(rd[:]); err != nil {
		return nil, err
	}
	for {
		n, err := e.poll(ctx, e.scq)
		if err != nil {
			return nil, err
		}
		if err := e.checkWCs(n); err != nil {
			return nil, err
		}
		if e.wcs[n-1].ID == ^uint64(0) {
			break
		}
	}
	el := time.Since(start)
	return &Result{Test: TestWrite, Size: p.Size, Duration: el, Bytes: posted * uint64(p.Size), Msgs: posted}, nil
}

// sendBatch is how many Sends the client posts in one PostSend call.
const sendBatch = 32

// queueCreditRecv queues the receive of credit slot i, which follows the
// size bytes of the message being sent.
func (e *endpoint) queueCreditRecv(size, i int) error {
	return e.queueRecv(uint64(i), size+i*creditLen, creditLen)
}

// runSendRate sends as fast as the server's credits allow for Duration,
// then waits until every credit is back, i.e. every message was received.
// The send queue holds a Send for every credit, so that only the credits
// pace the sender: with a queue of two batches (as before), a sender
// slept on its send CQ every 64 messages, and on a loaded host each of
// those sleeps cost as much as a credit round trip.
func (e *endpoint) runSendRate(ctx context.Context, p Params) (*Result, error) {
	var wrs [sendBatch]verbs.SendWR
	sgl := [1]verbs.SGE{e.sge(0, p.Size)}
	for i := range wrs {
		wrs[i] = verbs.SendWR{Opcode: verbs.OpSend, SGL: sgl[:]}
	}
	credits := p.Depth
	var sent, retired uint64 // sends posted; sends known complete
	var swc [16]verbs.WC
	start := time.Now()
	sending := true
	for sending || credits < p.Depth {
		if sending && !p.more(start, sent) {
			sending = false
		}
		// Post a batch, bounded by credits and send-queue room.
		if sending {
			room := p.Depth - int(sent-retired)
			k := p.left(min(sendBatch, credits, room), sent)
			for i := 0; i < k; i++ {
				wrs[i].ID = sent + uint64(i)
				wrs[i].Flags = 0
				if (sent+uint64(i)+1)%sendBatch == 0 {
					wrs[i].Flags = verbs.SendSignaled
				}
			}
			if k > 0 {
				if _, err := e.qp.PostSend(wrs[:k]); err != nil {
					return nil, err
				}
				sent += uint64(k)
				credits -= k
			}
		}
		// Retire sends and collect credits without blocking; block only
		// when nothing else can progress: then on the send CQ if the send
		// queue is full, else on the credits.
		if err := e.retire(swc[:], &retired); err != nil {
			return nil, err
		}
		n := e.rcq.Poll(e.wcs[:])
		if n == 0 {
			room := p.Depth - int(sent-retired)
			switch {
			case !sending && credits == p.Depth:
				continue // every credit is back: the loop ends
			case sending && credits > 0 && room > 0:
				continue
			case sending && credits > 0:
				if err := e.scq.Wait(ctx, false); err != nil {
					return nil, err
				}
				continue
			}
			var err error
			if n, err = e.poll(ctx, e.rcq); err != nil {
				return nil, err
			}
		}
		if err := e.checkWCs(n); err != nil {
			return nil, err
		}
		for i := 0; i < n; i++ {
			slot := int(e.wcs[i].ID)
			off := p.Size + slot*creditLen
			credits += int(binary.BigEndian.Uint32(e.buf[off:]))
			if err := e.queueCreditRecv(p.Size, slot); err != nil {
				return nil, err
			}
		}
		if err := e.postRecvs(); err != nil {
			return nil, err
		}
	}
	el := time.Since(start)
	return &Result{Test: TestSendRate, Size: p.Size, Duration: el, Bytes: sent * uint64(p.Size), Msgs: sent}, nil
}

// retire records the sends the send CQ reports complete.
func (e *endpoint) retire(swc []verbs.WC, retired *uint64) error {
	n := e.scq.Poll(swc)
	for i := 0; i < n; i++ {
		if swc[i].Status != verbs.WCSuccess {
			return &WCError{WC: swc[i]}
		}
	}
	if n > 0 {
		*retired = swc[n-1].ID + 1
	}
	return nil
}

// runPingPong sends one message at a time and waits for its echo.
func (e *endpoint) runPingPong(ctx context.Context, p Params) (*Result, error) {
	sgl := [1]verbs.SGE{e.sge(0, p.Size)}
	wr := [1]verbs.SendWR{{Opcode: verbs.OpSend, SGL: sgl[:], Flags: verbs.SendSignaled}}
	rtts := make([]time.Duration, 0, 1<<16)
	var swc [16]verbs.WC
	start := time.Now()
	var msgs uint64
	for t0 := start; p.more(start, msgs); t0 = time.Now() {
		if _, err := e.qp.PostSend(wr[:]); err != nil {
			return nil, err
		}
		n, err := e.poll(ctx, e.rcq)
		if err != nil {
			return nil, err
		}
		if err := e.checkWCs(n); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(t0))
		msgs++
		if err := e.postRecvSlot(1, p.Size); err != nil {
			return nil, err
		}
		if k := e.scq.Poll(swc[:]); k > 0 && swc[k-1].Status != verbs.WCSuccess {
			return nil, &WCError{WC: swc[k-1]}
		}
	}
	el := time.Since(start)
	slices.Sort(rtts)
	return &Result{Test: TestPingPong, Size: p.Size, Duration: el, Bytes: msgs * uint64(p.Size), Msgs: msgs, RTTs: rtts}, nil
}
