package perf

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// TestWorkloadsMem runs every workload briefly over the in-memory
// provider and the TCP baseline and checks that they moved data.
func TestWorkloadsMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := mem.New()
	sdev, _ := p.Open(mem.DeviceName)
	cdev, _ := p.Open(mem.DeviceName)
	defer sdev.Close()
	defer cdev.Close()
	srv, err := Serve(ctx, sdev, "perf:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tsrv, err := ServeTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tsrv.Close()
	for _, tc := range []Params{
		{Test: TestWrite, Size: 64 << 10, Depth: 8},
		{Test: TestSendRate, Size: 64, Depth: 128},
		{Test: TestPingPong, Size: 64, Depth: 1},
	} {
		tc.Duration = 100 * time.Millisecond
		r, err := Run(ctx, cdev, srv.Addr().String(), tc)
		if err != nil {
			t.Fatalf("%v: %v", tc.Test, err)
		}
		if r.Msgs == 0 || r.Bytes != r.Msgs*uint64(tc.Size) {
			t.Fatalf("%v: result %+v", tc.Test, r)
		}
		if tc.Test == TestPingPong && (len(r.RTTs) != int(r.Msgs) || r.Percentile(50) <= 0) {
			t.Fatalf("pingpong RTTs %d for %d msgs", len(r.RTTs), r.Msgs)
		}
		tr, err := RunTCP(ctx, tsrv.Addr().String(), tc)
		if err != nil {
			t.Fatalf("tcp %v: %v", tc.Test, err)
		}
		if tr.Msgs == 0 {
			t.Fatalf("tcp %v moved nothing", tc.Test)
		}
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Fatalf("server errors: %v", errs)
	}
}
