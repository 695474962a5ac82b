package shmring

import (
	"context"
	"testing"
)

// The hot path allocates nothing: copying calls, in-place calls, and the
// blocking calls when they need not block.
func TestHotPathAllocs(t *testing.T) {
	prod, cons := pair(t, 1<<16)
	rec := make([]byte, 64)
	buf := make([]byte, 64)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for name, fn := range map[string]func(){
		"TryWrite/TryRead": func() {
			if !prod.TryWrite(rec) {
				t.Fatal("TryWrite")
			}
			if _, ok := cons.TryRead(buf); !ok {
				t.Fatal("TryRead")
			}
		},
		"Write/Read": func() {
			if err := prod.Write(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if _, err := cons.Read(ctx, buf); err != nil {
				t.Fatal(err)
			}
		},
		"Reserve/Commit/Peek/Release": func() {
			b, err := prod.Reserve(ctx, 64)
			if err != nil {
				t.Fatal(err)
			}
			copy(b, rec)
			if err := prod.Commit(len(b)); err != nil {
				t.Fatal(err)
			}
			if _, err := cons.Peek(ctx); err != nil {
				t.Fatal(err)
			}
			cons.Release()
		},
	} {
		if a := testing.AllocsPerRun(1000, fn); a != 0 {
			t.Errorf("%s: %v allocations per record", name, a)
		}
	}
}
