package core

import (
	"testing"

	"github.com/godapl/godapl/dat"
)

// The batch that get takes without the table's lock (own) is free, yet
// counted against the limit: the limit holds exactly, however the slots
// are split between own and free, and a lowered limit counts only the
// slots really in use.
func TestCookieTableLimitWithBatches(t *testing.T) {
	var tbl cookieTable
	tbl.init(100)
	if !tbl.setLimit(40) {
		t.Fatal("setLimit(40) on an empty table failed")
	}
	var got []uint32
	for i := range 40 {
		slot, ok := tbl.get(cookieSlot{cookie: dat.DTOCookie(i), op: dat.DTOReceive})
		if !ok {
			t.Fatalf("get %d of 40 refused", i)
		}
		if s, _ := tbl.peek(slot); s.cookie != dat.DTOCookie(i) {
			t.Fatalf("slot %d holds cookie %d, want %d", slot, s.cookie, i)
		}
		got = append(got, slot)
	}
	if _, ok := tbl.get(cookieSlot{}); ok {
		t.Fatal("a 41st slot under a limit of 40")
	}
	if n := tbl.inUse(); n != 40 {
		t.Fatalf("inUse = %d, want 40", n)
	}
	for _, s := range got[:30] {
		tbl.put(s)
	}
	if n := tbl.inUse(); n != 10 {
		t.Fatalf("inUse = %d after 30 puts, want 10", n)
	}
	// One get moves a batch into own; the limit then drops below what
	// own and the used slots add up to, but not below the used ones.
	if _, ok := tbl.get(cookieSlot{}); !ok {
		t.Fatal("get after puts refused")
	}
	if len(tbl.own) == 0 {
		t.Fatal("get left no batch in own: the test does not exercise it")
	}
	if tbl.setLimit(10) {
		t.Fatal("setLimit(10) with 11 slots in use succeeded")
	}
	if !tbl.setLimit(11) {
		t.Fatal("setLimit(11) with 11 slots in use failed")
	}
	if _, ok := tbl.get(cookieSlot{}); ok {
		t.Fatal("a 12th slot under a limit of 11")
	}
	if !tbl.setLimit(200) {
		t.Fatal("growing to 200 failed")
	}
	for i := range 189 {
		if _, ok := tbl.get(cookieSlot{}); !ok {
			t.Fatalf("get %d of 189 after growing refused", i)
		}
	}
	if _, ok := tbl.get(cookieSlot{}); ok {
		t.Fatal("a 201st slot under a limit of 200")
	}
	if n := tbl.inUse(); n != 200 {
		t.Fatalf("inUse = %d, want 200", n)
	}
}
