package rdsoverdat

import (
	"bytes"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// sinkFixture is directFixture with b's socket given an armed delivery
// sink, of the daemon's allowance.
func sinkFixture(t *testing.T) (a, b *Socket, p *connPath, s *sock) {
	a, b, p = directFixture(t)
	s = b.sock()
	if !s.armSink(true) {
		t.Fatal("sink not armed")
	}
	return a, b, p, s
}

// sinkSend drives p as a transport would for a message of payload
// from a to b: into the sink when it claims it, else the ordinary way.
// It reports whether the sink took it.
func sinkSend(t *testing.T, p *connPath, a, b *Socket, payload []byte) bool {
	t.Helper()
	h := directHeader(p, a, b, len(payload))
	if d, ok := p.ClaimDirect(h); ok {
		copy(d.Buf, payload)
		d.Done(true)
		return true
	}
	m, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	copy(m.Payload(), payload)
	p.Receive(m)
	return false
}

// takeAll hands ahead what s holds, as the daemon does, and returns the
// payloads in order and the messages counted as handed ahead.
func takeAll(t *testing.T, s *sock, maxMsgs, room int) [][]byte {
	t.Helper()
	body, took, _ := s.takeAhead(nil, maxMsgs, room, nil)
	count, bytesN := took.count, took.bytes
	var out [][]byte
	total := 0
	for len(body) > 0 {
		_, data, rest, err := rdsdproto.NextAhead(body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append([]byte(nil), data...))
		total += len(data)
		body = rest
	}
	if len(out) != count || total != bytesN {
		t.Fatalf("batch of %d messages, %d bytes; takeAhead said %d, %d", len(out), total, count, bytesN)
	}
	return out
}

func sinkMsg(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 64+i) }

// Entries in the sink are the head of the receive queue: Buffered and
// Poll count them, receives of the core and the daemon's batches take
// them before anything on rxq, and a message that could not go into the
// sink (a large one) keeps every later one of its path out of it until
// rxq is empty.
func TestSinkOrderAcrossSwitch(t *testing.T) {
	leakCheck(t)
	a, b, p, s := sinkFixture(t)
	if err := b.SetOption(RecvBuffer(1000)); err != nil { // a sink of 64 KiB at most
		t.Fatal(err)
	}
	if !sinkSend(t, p, a, b, sinkMsg(1)) || !sinkSend(t, p, a, b, sinkMsg(2)) {
		t.Fatal("plain messages not taken by the armed sink")
	}
	if _, rcv := b.Buffered(); rcv != len(sinkMsg(1))+len(sinkMsg(2)) {
		t.Errorf("Buffered recv = %d with two entries in the sink", rcv)
	}
	if b.Poll()&PollIn == 0 {
		t.Error("no POLLIN with entries in the sink")
	}
	big := bytes.Repeat([]byte{7}, 70<<10)
	if sinkSend(t, p, a, b, big) {
		t.Fatal("the sink took a large message")
	}
	if sinkSend(t, p, a, b, sinkMsg(3)) {
		t.Fatal("the sink took a message behind a queued one")
	}
	m := Msg{Data: make([]byte, 256)}
	n, err := s.recvmsg(&m, MsgDontWait|MsgPeek)
	if err != nil || !bytes.Equal(m.Data[:n], sinkMsg(1)) || m.Addr != a.BoundAddr() {
		t.Fatalf("peek = %d, %v from %v; want message 1", n, err, m.Addr)
	}
	for i, want := range [][]byte{sinkMsg(1), sinkMsg(2), big, sinkMsg(3)} {
		n, err := s.recvmsg(&m, MsgDontWait|MsgTrunc)
		if err != nil || n != len(want) || !bytes.Equal(m.Data[:min(n, len(m.Data))], want[:min(n, len(m.Data))]) {
			t.Fatalf("receive %d = %d, %v; want %d bytes", i, n, err, len(want))
		}
	}
	// The port's uncongestion changes the maps twice, b's node's at once
	// and a's view of it when the update has crossed the connection,
	// and each change shows once as POLLIN to a socket that does not
	// monitor congestion: POLLIN must go once both have come.
	eventually(t, 5*time.Second, "POLLIN to clear with everything read", func() bool {
		b.Poll()
		return b.Poll()&PollIn == 0
	})
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Fatalf("Buffered recv = %d with everything read", rcv)
	}
	// rxq empty: the sink takes messages again. A batch takes the
	// sink's entries first, within its limits, and rxq only once the
	// sink is empty.
	for i := 4; i < 7; i++ {
		if !sinkSend(t, p, a, b, sinkMsg(i)) {
			t.Fatalf("the sink refused message %d with rxq empty", i)
		}
	}
	sinkSend(t, p, a, b, big) // rxq
	got := takeAll(t, s, 2, aheadBytes)
	if len(got) != 2 || !bytes.Equal(got[0], sinkMsg(4)) || !bytes.Equal(got[1], sinkMsg(5)) {
		t.Fatalf("batch of at most 2 = %d messages", len(got))
	}
	got = takeAll(t, s, aheadMsgs, aheadBytes)
	if len(got) != 1 || !bytes.Equal(got[0], sinkMsg(6)) {
		t.Fatalf("next batch = %d messages, want the last entry alone (the large one does not fit)", len(got))
	}
	if _, rcv := b.Buffered(); rcv != len(sinkMsg(4))+len(sinkMsg(5))+len(sinkMsg(6))+len(big) {
		t.Errorf("Buffered recv = %d: handed ahead and queued bytes both count", rcv)
	}
	s.aheadRead(3, len(sinkMsg(4))+len(sinkMsg(5))+len(sinkMsg(6)))
	got = takeAll(t, s, aheadMsgs, len(big))
	if len(got) != 1 || !bytes.Equal(got[0], big) {
		t.Fatalf("last batch = %d messages, want the large one", len(got))
	}
}

// A claim under way when the sink is disarmed ends as a queued message;
// a failed claim leaves nothing counted and its room free.
func TestSinkDisarmDuringClaim(t *testing.T) {
	leakCheck(t)
	a, b, p, s := sinkFixture(t)
	d, ok := p.ClaimDirect(directHeader(p, a, b, 100))
	if !ok {
		t.Fatal("not claimed")
	}
	if _, ok := p.ClaimDirect(directHeader(p, a, b, 100)); ok {
		t.Fatal("two claims into one sink at once")
	}
	d.Done(false)
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Fatalf("Buffered recv = %d after a failed claim", rcv)
	}
	d, ok = p.ClaimDirect(directHeader(p, a, b, 100))
	if !ok {
		t.Fatal("not claimed after a failed claim")
	}
	copy(d.Buf, directPattern(100, 5))
	s.armSink(false)
	d.Done(true)
	if s.sink.n > 0 {
		t.Fatal("an entry completed into a disarmed sink")
	}
	var m Msg
	m.Data = make([]byte, 256)
	n, err := s.recvmsg(&m, MsgDontWait)
	if err != nil || !bytes.Equal(m.Data[:n], directPattern(100, 5)) || m.Addr != a.BoundAddr() {
		t.Fatalf("core receive = %d, %v from %v; want the claimed message", n, err, m.Addr)
	}
	if _, ok := p.ClaimDirect(directHeader(p, a, b, 100)); ok {
		t.Fatal("a disarmed sink claimed a small message")
	}
}

// The port congests when entries exceed SO_RCVBUF, stays congested
// while they are handed ahead and unread, and uncongests when the
// client's reads free them, or when receives of the core take them; a
// notification waiting keeps messages out of the sink; Close forgets
// entries, and a claim that ends after it counts nothing.
func TestSinkCongestionNotesClose(t *testing.T) {
	leakCheck(t)
	a, b, p, s := sinkFixture(t)
	if err := b.SetOption(RecvBuffer(300)); err != nil {
		t.Fatal(err)
	}
	fill := func() int {
		total := 0
		for i := range 5 {
			if !sinkSend(t, p, a, b, sinkMsg(i)) {
				t.Fatalf("message %d not taken", i)
			}
			total += len(sinkMsg(i))
		}
		if !s.congestedNow() {
			t.Fatalf("%d bytes in the sink over SO_RCVBUF 300, port not congested", total)
		}
		return total
	}
	total := fill()
	takeAll(t, s, aheadMsgs, aheadBytes)
	if !s.congestedNow() {
		t.Fatal("handing ahead uncongested the port: only reads may")
	}
	s.aheadRead(5, total)
	if s.congestedNow() {
		t.Fatal("port still congested with everything read")
	}
	fill()
	m := Msg{Data: make([]byte, 256)}
	for range 5 {
		if _, err := s.recvmsg(&m, MsgDontWait); err != nil {
			t.Fatal(err)
		}
	}
	if s.congestedNow() {
		t.Fatal("port still congested with the sink read")
	}

	s.mu.Lock()
	s.congNotify = 1
	s.mu.Unlock()
	if sinkSend(t, p, a, b, sinkMsg(1)) {
		t.Fatal("the sink took a message while a notification waits")
	}
	s.mu.Lock()
	s.congNotify = 0
	s.mu.Unlock()
	if _, err := s.recvmsg(&m, MsgDontWait); err != nil { // the message queued on rxq
		t.Fatal(err)
	}

	sinkSend(t, p, a, b, sinkMsg(2))
	d, ok := p.ClaimDirect(directHeader(p, a, b, 64))
	if !ok {
		t.Fatal("not claimed")
	}
	b.Close()
	d.Done(true)
	if s.sink.n > 0 || s.sink.claimed {
		t.Error("entries left in a closed socket's sink")
	}
	if s.node.sinks.Load() != 0 {
		t.Errorf("%d armed sinks counted after Close", s.node.sinks.Load())
	}
}

// A message to a socket whose sink is armed reaches the batch without a
// message object: the delivery costs no allocation.
func TestSinkClaimAllocs(t *testing.T) {
	a, b, p, s := sinkFixture(t)
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	payload := sinkMsg(0)
	var body []byte
	h := directHeader(p, a, b, len(payload))
	deliver := func() {
		h.SetSequence(h.Sequence() + 1)
		d, ok := p.ClaimDirect(h)
		if !ok {
			t.Fatal("not claimed")
		}
		copy(d.Buf, payload)
		d.Done(true)
		body, _, _ = s.takeAhead(body[:0], aheadMsgs, aheadBytes, nil)
		s.aheadRead(1, len(payload))
	}
	deliver()
	if n := testing.AllocsPerRun(200, deliver); n != 0 {
		t.Errorf("%v allocs a message through the sink", n)
	}
	var _ xport.DirectSink = (*sinkClaim)(s)
}

// ClaimSink, the claim of a RecvMsg running a reader role, offers only a
// socket's sink: never a waiting receiver's buffer, which only the
// connection's reader goroutine may fill.
func TestSinkClaimSinkOnly(t *testing.T) {
	leakCheck(t)
	a, b, p, s := sinkFixture(t)
	d, ok := p.ClaimSink(directHeader(p, a, b, 100))
	if !ok {
		t.Fatal("ClaimSink refused an armed sink")
	}
	d.Done(true)
	if s.sink.n != 1 {
		t.Fatalf("%d entries after a ClaimSink, want 1", s.sink.n)
	}
	m := Msg{Data: make([]byte, 256)}
	if n, err := s.recvmsg(&m, MsgDontWait); err != nil || n != 100 {
		t.Fatalf("receive = %d, %v", n, err)
	}
	// b waits with a large buffer on offer, its sink disarmed; another
	// socket of the node keeps a sink armed.
	s.armSink(false)
	c := mustBind(t, s.stack, ap(b.BoundAddr().Addr(), 0))
	c.sock().armSink(true)
	res := recvAsync(b, 64<<10)
	eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
	if _, ok := p.ClaimSink(directHeader(p, a, b, 40<<10)); ok {
		t.Fatal("ClaimSink claimed a waiting receiver's buffer")
	}
	if _, err := a.SendTo([]byte("end"), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, res); r.err != nil || string(r.data) != "end" {
		t.Fatalf("RecvMsg = %q, %v", r.data, r.err)
	}
}

// The sink grows up to twice SO_RCVBUF (64 KiB at least); past that,
// messages are queued the ordinary way.
func TestSinkLimit(t *testing.T) {
	leakCheck(t)
	a, b, p, s := sinkFixture(t)
	if err := b.SetOption(RecvBuffer(1000)); err != nil {
		t.Fatal(err)
	}
	msg := bytes.Repeat([]byte{3}, 20<<10)
	for i := range 3 {
		if !sinkSend(t, p, a, b, msg) {
			t.Fatalf("message %d of 3 (60 KiB) refused", i)
		}
	}
	if sinkSend(t, p, a, b, msg) {
		t.Fatal("the sink grew past 64 KiB")
	}
	m := Msg{Data: make([]byte, 32<<10)}
	for i := range 4 {
		if n, err := s.recvmsg(&m, MsgDontWait); err != nil || n != len(msg) {
			t.Fatalf("receive %d = %d, %v", i, n, err)
		}
	}
	if !sinkSend(t, p, a, b, msg) {
		t.Fatal("the emptied sink refused a message")
	}
}
