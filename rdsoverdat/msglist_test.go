package rdsoverdat

import "testing"

// checkList fails unless l holds want, in order, with consistent links,
// count and owner.
func checkList(t *testing.T, name string, l *msgList, want []*message) {
	t.Helper()
	if l.n != len(want) {
		t.Fatalf("%s: n %d, want %d", name, l.n, len(want))
	}
	var prev *message
	m := l.head
	for i, w := range want {
		if m != w {
			t.Fatalf("%s: message %d is %p, want %p", name, i, m, w)
		}
		if m.prev != prev || m.onList != l {
			t.Fatalf("%s: message %d: prev %p onList %p, want %p %p", name, i, m.prev, m.onList, prev, l)
		}
		prev, m = m, m.next
	}
	if m != nil || l.tail != prev {
		t.Fatalf("%s: ends at %p, tail %p, want nil, %p", name, m, l.tail, prev)
	}
}

// TestMsgListMoveFrontTo: moving the head of one list to the back of
// another keeps both lists' order, links and counts, for lists of no,
// one and more messages, as popFront and pushBack do.
func TestMsgListMoveFrontTo(t *testing.T) {
	ms := make([]*message, 5)
	for i := range ms {
		ms[i] = &message{}
	}
	var from, to msgList
	if m := from.moveFrontTo(&to); m != nil {
		t.Fatalf("moved %p from an empty list", m)
	}
	for _, m := range ms[:3] {
		from.pushBack(m)
	}
	to.pushBack(ms[3])
	to.pushBack(ms[4])
	for i, want := range ms[:3] {
		if m := from.moveFrontTo(&to); m != want {
			t.Fatalf("move %d took %p, want %p", i, m, want)
		}
		checkList(t, "from", &from, ms[i+1:3])
		checkList(t, "to", &to, append(append([]*message{}, ms[3:]...), ms[:i+1]...))
	}
	var empty msgList
	m := to.popFront()
	empty.pushBack(m)
	if got := empty.moveFrontTo(&from); got != m {
		t.Fatalf("moved %p, want %p", got, m)
	}
	checkList(t, "emptied", &empty, nil)
	checkList(t, "into empty", &from, []*message{m})
}
