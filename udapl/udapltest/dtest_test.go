//go:build udapl

package udapltest

import (
	"strings"
	"testing"
	"time"
)

// TestDtest runs Debian's dtest, server and client, on godapl: connection
// set-up with private data, message exchange, RDMA Writes of 4 MiB both
// ways, RDMA Reads, disconnection.
func TestDtest(t *testing.T) {
	need(t, "dtest")
	i := newIA(t)
	srv := i.start(t, "Server is waiting for client connection", "dtest", "-P", iaName, "-s", "-v")
	// dtest's server prints its ready line before it listens on its side
	// channel: a client that comes too early finds nobody and is run again.
	var out string
	var err error
	for try := 0; try < 50; try++ {
		out, err = i.run(t, 2*time.Minute, "dtest", "-P", iaName, "-h", i.addr.String(), "-v")
		if !strings.Contains(out, "Couldn't connect to") {
			break
		}
	}
	if err != nil || !strings.Contains(out, "DAPL Test Complete. PASSED") {
		t.Fatalf("dtest client: %v\n%s", err, out)
	}
	sout, err := srv.wait(t, time.Minute)
	if err != nil || !strings.Contains(sout, "DAPL Test Complete. PASSED") {
		t.Fatalf("dtest server: %v\n%s", err, sout)
	}
	// dtest reads only where the provider reports DAT_IB_RDMA_READ; a
	// side that skips the phase leaves a peer on another provider waiting.
	for side, o := range map[string]string{"client": out, "server": sout} {
		if !strings.Contains(o, "RDMA READ DATA with SEND MSG") || !strings.Contains(o, "RDMA read completion message") {
			t.Errorf("dtest %s skipped its RDMA Read phase:\n%s", side, o)
		}
	}
	t.Logf("client: %s", strings.Join(lines(out, "MB/sec"), "; "))
}
