package interop

// Kernel siw as the peer: the lab's siw smoke test, and the MPA v2
// handshake of the kernel's siw listener (rping -s) answering a hand-built
// request.

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rping ports, one per test, so that a server a failed test left behind
// cannot answer another test's client.
const (
	portSmoke   = 7174 // TestLabSiwSmoke, passed to tests/lab/smoke/siw.sh
	portMPAHost = 7177 // TestKernelMPAReply
	portMPAVM   = 7178 // TestVMRunsRepoBinary
)

// mpaRequestV2 is, byte for byte, the MPA Request the kernel's siw sends
// for rping (iwarp-wire.md §3.1 and §7): the key, flags 0x10 (RFC 6581
// enhanced connection establishment; M and C clear, so no markers and no
// CRC), Rev 2, PD_Length 4, then the MPA v2 block IRD 1, ORD 1 without the
// peer-to-peer bit. Built by hand on purpose: it checks the kernel, not
// godapl's encoder.
var mpaRequestV2 = []byte("MPA ID Req Frame\x10\x02\x00\x04\x00\x01\x00\x01")

func TestLabSiwSmoke(t *testing.T) {
	requireLab(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// smoke/siw.sh: ibv_devices, ibv_devinfo of siw0, and an rping server
	// and client over siw0 on port portSmoke.
	out, err := vmExec(ctx, t, filepath.Join(lab.dir, "smoke", "siw.sh"), strconv.Itoa(portSmoke)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "siw smoke: OK") {
		t.Fatalf("smoke/siw.sh: %v\n%s", err, out)
	}
	for _, want := range []string{"transport:\t\t\tiWARP", "client rc=0 server rc=0"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("smoke/siw.sh output lacks %q", want)
		}
	}
}

// TestKernelMPAReply sends the MPA v2 Request from the host side of the
// bridge (netns ratlab, 192.168.77.1) to the siw listener of a kernel
// rping server and checks the Reply: the first interop step of a Go
// initiator against kernel siw.
func TestKernelMPAReply(t *testing.T) {
	requireLab(t)
	probe := buildBinary(t, "./tests/interop/internal/tcpprobe")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	server, addr := startRpingServer(ctx, t, portMPAHost)

	out, err := nsExec(ctx, t, probe, "-addr", addr, "-send", hex.EncodeToString(mpaRequestV2),
		"-read", strconv.Itoa(len(mpaRequestV2))).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpprobe in netns ratlab: %v\n%s", err, out)
	}
	local, reply := parseProbe(t, string(out))
	if host, _, _ := net.SplitHostPort(local); host != hostIP {
		t.Errorf("probe connected from %s, want %s (netns ratlab)", local, hostIP)
	}
	checkMPAReplyV2(t, reply)
	logServerEnd(ctx, t, server)
}

// TestVMRunsRepoBinary runs the same exchange with the probe inside the VM,
// against a server in the same VM: it proves that a binary built into
// <repo>/bin during the test run is visible and current in the VM, which the
// rping interop tests rely on.
func TestVMRunsRepoBinary(t *testing.T) {
	requireLab(t)
	probe := buildBinary(t, "./tests/interop/internal/tcpprobe")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	server, addr := startRpingServer(ctx, t, portMPAVM)

	out, err := vmExec(ctx, t, probe, "-addr", addr, "-send", hex.EncodeToString(mpaRequestV2),
		"-read", strconv.Itoa(len(mpaRequestV2))).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpprobe in the VM: %v\n%s", err, out)
	}
	local, reply := parseProbe(t, string(out))
	if host, _, _ := net.SplitHostPort(local); host != vmIP {
		t.Errorf("probe connected from %s, want %s (inside the VM)", local, vmIP)
	}
	checkMPAReplyV2(t, reply)
	logServerEnd(ctx, t, server)
}

// startRpingServer starts `rping -s` on siw0 in the VM and waits until its
// listener accepts TCP connections. It returns the job and the address.
func startRpingServer(ctx context.Context, t *testing.T, port int) (*job, string) {
	t.Helper()
	addr := net.JoinHostPort(vmIP, strconv.Itoa(port))
	server := startJob(t, vmExec(ctx, t, "rping", "-s", "-a", vmIP, "-p", strconv.Itoa(port), "-v"))
	waitVMListen(ctx, t, addr, server)
	return server, addr
}

// logServerEnd waits briefly for the rping server, which gives up on the
// connection once the probe closes it without going on to RDMA traffic,
// and logs how it ended; the test's cleanup stops it otherwise.
func logServerEnd(ctx context.Context, t *testing.T, server *job) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := server.wait(ctx)
	t.Logf("rping server: exit %d (%v)\n%s", exitCode(err), err, server.out.String())
}

// parseProbe extracts tcpprobe's "local" and "reply" lines.
func parseProbe(t *testing.T, out string) (local string, reply []byte) {
	t.Helper()
	var replyHex string
	var haveReply bool
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "local "); ok {
			local = v
		}
		if v, ok := strings.CutPrefix(line, "reply "); ok {
			replyHex, haveReply = v, true
		}
	}
	if local == "" || !haveReply {
		t.Fatalf("tcpprobe output lacks its local/reply lines:\n%s", out)
	}
	reply, err := hex.DecodeString(replyHex)
	if err != nil {
		t.Fatalf("tcpprobe reply %q: %v", replyHex, err)
	}
	return local, reply
}

// checkMPAReplyV2 checks the Reply to mpaRequestV2 field by field
// (iwarp-wire.md §3.1-§3.3): siw echoes flags and Rev, and its IRD/ORD are
// those rping asked for, without P2P.
func checkMPAReplyV2(t *testing.T, reply []byte) {
	t.Helper()
	t.Logf("MPA Reply: % x", reply)
	if len(reply) != 24 {
		t.Fatalf("MPA Reply is %d bytes, want 24", len(reply))
	}
	for _, c := range []struct {
		field     string
		got, want string
	}{
		{"key", string(reply[0:16]), "MPA ID Rep Frame"},
		{"flags (0x10 enhanced; no R, M, C)", fmt.Sprintf("%#02x", reply[16]), "0x10"},
		{"Rev", strconv.Itoa(int(reply[17])), "2"},
		{"PD_Length", hex.EncodeToString(reply[18:20]), "0004"},
		{"IRD word", hex.EncodeToString(reply[20:22]), "0001"},
		{"ORD word", hex.EncodeToString(reply[22:24]), "0001"},
	} {
		if c.got != c.want {
			t.Errorf("MPA Reply %s = %q, want %q", c.field, c.got, c.want)
		}
	}
}
