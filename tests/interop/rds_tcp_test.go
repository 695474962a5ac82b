package interop

// RDS/TCP interoperability (issue 8): rdsoverdat's tcp transport at
// 192.168.77.1 (netns ratlab; cmd/rds-cat and internal/rdspeer) against
// the rds_tcp of the kernel in rdsVM (192.168.77.3, its own VM so that the
// siw/rping tests' `vm.sh killjobs` never stops an RDS peer), driven by
// testdata/rds_kernel_peer.py. The Go side has the smaller address, so it
// is the connecting side of every path; when the kernel sends first, its
// trigger connection is reset and Go connects back (rds-wire.md §2.2).
//
// RDS ports: 4010-4099 one or two per test (below), 4100-4131 and
// 4200-4231 for the many-ports tests, 18005 (tests/lab/smoke/rds.py).
//
// Only one process at a time may run these tests: the Go node listens on
// 192.168.77.1:16385, which exists once in netns ratlab. lockRDS
// serializes them across `go test` processes.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kernelPeer is the kernel-side script's path (the repository is shared
// with the VM, so it is current there).
func kernelPeer() string {
	return filepath.Join(lab.repo, "tests", "interop", "testdata", "rds_kernel_peer.py")
}

// rdsTest prepares an RDS interop test: the VM, the cross-process lock,
// a context and the two binaries.
func rdsTest(t *testing.T, timeout time.Duration) (ctx context.Context, rdsCat, rdsPeer string) {
	t.Helper()
	requireVM(t, rdsVM)
	lockRDS(t)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx, buildBinary(t, "./cmd/rds-cat"), buildBinary(t, "./tests/interop/internal/rdspeer")
}

// lockRDS holds an exclusive flock on $LAB_CACHE/vms/rds-interop.lock
// until the test ends.
func lockRDS(t *testing.T) {
	t.Helper()
	dir := filepath.Join(lab.cache, "vms")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "rds-interop.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}

// kernelJob starts rds_kernel_peer.py in rdsVM and waits for "kernel ready".
func kernelJob(ctx context.Context, t *testing.T, args ...string) *job {
	t.Helper()
	j := startJob(t, rdsVM.exec(ctx, t, append([]string{"python3", kernelPeer()}, args...)...))
	waitJobOutput(ctx, t, j, "kernel ready")
	return j
}

// finish waits for both sides and fails the test unless both succeeded
// and printed every wanted line.
func finish(ctx context.Context, t *testing.T, goSide, kernel *job, goWant, kernelWant []string) {
	t.Helper()
	gerr, kerr := goSide.wait(ctx), kernel.wait(ctx)
	gout, kout := goSide.out.String(), kernel.out.String()
	t.Logf("Go side:\n%s\nkernel:\n%s", gout, kout)
	if gerr != nil || kerr != nil {
		t.Fatalf("Go side: %v, kernel: %v", gerr, kerr)
	}
	for _, w := range goWant {
		if !strings.Contains(gout, w) {
			t.Errorf("Go side lacks %q", w)
		}
	}
	for _, w := range kernelWant {
		if !strings.Contains(kout, w) {
			t.Errorf("kernel lacks %q", w)
		}
	}
}

func hostAddr(port int) string { return hostIP + ":" + strconv.Itoa(port) }
func kernAddr(port int) string { return rdsVM.ip + ":" + strconv.Itoa(port) }

// kernelGreeting is what tests/lab/smoke/rds.py --peer sends.
const kernelGreeting = "kernel rds_tcp greets the peer"

// TestRDSTCPKernelSendsToGo: the kernel sends first (smoke/rds.py --peer);
// the Go node echoes; the kernel socket receives the echo.
func TestRDSTCPKernelSendsToGo(t *testing.T) {
	ctx, bin, _ := rdsTest(t, 2*time.Minute)
	goSide := startJob(t, nsExec(ctx, t, bin, "-transport", "tcp", "-bind", hostAddr(4010), "-echo", "-timeout", "20s"))
	time.Sleep(time.Second) // the Go node listens on 16385 once bound
	out, err := rdsVM.exec(ctx, t, "python3", filepath.Join(lab.dir, "smoke", "rds.py"), "--no-local",
		"--addr", rdsVM.ip, "--peer", hostAddr(4010)).CombinedOutput()
	if err != nil {
		t.Fatalf("smoke/rds.py: %v\n%s\nGo side:\n%s", err, out, goSide.out.String())
	}
	want := "reply from " + hostAddr(4010) + ": b'" + kernelGreeting + "'"
	if !strings.Contains(string(out), want) {
		t.Fatalf("kernel output lacks %q:\n%s\nGo side:\n%s", want, out, goSide.out.String())
	}
	if err := goSide.wait(ctx); err != nil {
		t.Fatalf("rds-cat: %v\n%s", err, goSide.out.String())
	}
	if !strings.Contains(goSide.out.String(), fmt.Sprintf("recv from %s len %d", kernAddr(18005), len(kernelGreeting))) {
		t.Errorf("Go side output:\n%s", goSide.out.String())
	}
}

// TestRDSTCPSizes: Go sends 0 B to 1 MiB (RDS_MAX_MSG_SIZE) messages, the
// kernel echoes each whole (kernel -> Go carries the same sizes), and
// 1 MiB + 1 fails locally with EMSGSIZE. The kernel side needs
// SO_SNDBUFFORCE: it refuses messages above sk_sndbuf/2.
func TestRDSTCPSizes(t *testing.T) {
	ctx, _, peer := rdsTest(t, 3*time.Minute)
	sizes := []string{"0", "1", "47", "48", "100", "1500", "4095", "4096", "4097", "8192", "65535",
		"65536", "131072", "1048575", "1048576"}
	kernel := kernelJob(ctx, t, "echo", rdsVM.ip, "4012", strconv.Itoa(len(sizes)))
	goSide := startJob(t, nsExec(ctx, t, peer, "sizes", "-bind", hostAddr(4011), "-to", kernAddr(4012),
		"-sizes", strings.Join(sizes, ",")))
	var goWant, kWant []string
	for _, n := range sizes {
		goWant = append(goWant, "size "+n+" echoed intact\n")
		kWant = append(kWant, "kernel recv "+n+" from "+hostAddr(4011)+"\n")
	}
	finish(ctx, t, goSide, kernel, append(goWant, "size 1048577 EMSGSIZE", "OK"), kWant)
}

// TestRDSTCPPing: rds-ping's protocol both ways (messages to port 0 are
// answered with 0-byte pongs from port 0).
func TestRDSTCPPing(t *testing.T) {
	ctx, bin, _ := rdsTest(t, 2*time.Minute)
	out, err := nsExec(ctx, t, bin, "-transport", "tcp", "-bind", hostAddr(4013), "-ping", rdsVM.ip, "-count", "3", "-timeout", "20s").CombinedOutput()
	if err != nil || strings.Count(string(out), "from "+kernAddr(0)+" len 0") != 3 {
		t.Fatalf("Go pinging the kernel: %v\n%s", err, out)
	}
	goSide := startJob(t, nsExec(ctx, t, bin, "-transport", "tcp", "-bind", hostAddr(4014), "-echo", "-timeout", "15s"))
	time.Sleep(time.Second)
	kout, err := rdsVM.exec(ctx, t, "python3", kernelPeer(), "--timeout", "10", "ping", rdsVM.ip, hostIP, "3").CombinedOutput()
	if err != nil || strings.Count(string(kout), "kernel pong 0 from "+hostAddr(0)) != 3 {
		t.Fatalf("kernel pinging Go: %v\n%s\nGo side:\n%s", err, kout, goSide.out.String())
	}
	goSide.wait(ctx)
}

// TestRDSTCPManyPorts: 32 Go sockets each talk to their own kernel socket
// over the one connection; every reply names both ports.
func TestRDSTCPManyPorts(t *testing.T) {
	ctx, _, peer := rdsTest(t, 2*time.Minute)
	kernel := kernelJob(ctx, t, "ports", rdsVM.ip, "4200", "32")
	goSide := startJob(t, nsExec(ctx, t, peer, "ports", "-addr", hostIP, "-base", "4100", "-n", "32",
		"-to", rdsVM.ip, "-tbase", "4200"))
	finish(ctx, t, goSide, kernel, []string{"ports ok 32", "npaths 1", "OK"}, []string{"kernel ports ok 32"})
}

// TestRDSTCPStreamBothWays: 3000 numbered messages each way at once,
// checked for order and exactly-once on both sides.
func TestRDSTCPStreamBothWays(t *testing.T) {
	ctx, _, peer := rdsTest(t, 3*time.Minute)
	sink := kernelJob(ctx, t, "sink", rdsVM.ip, "4016", "3000")
	goSide := startJob(t, nsExec(ctx, t, peer, "stream", "-bind", hostAddr(4015), "-to", kernAddr(4016),
		"-n", "3000", "-size", "1024", "-recv", "3000", "-timeout", "150s"))
	source := kernelJob(ctx, t, "source", rdsVM.ip, "4017", hostAddr(4015), "3000", "1024")
	finish(ctx, t, goSide, sink, []string{"sent 3000\n", "received 3000 in order", "all acknowledged", "OK"},
		[]string{"kernel sink ok 3000 in order"})
	if err := source.wait(ctx); err != nil {
		t.Fatalf("kernel source: %v\n%s", err, source.out.String())
	}
}

// TestRDSTCPResetMidStream: like TestRDSTCPStreamBothWays, but after 500
// of its messages (and one of the kernel's) Go black-holes what it sends to the VM (a bogus
// neighbour entry for the VM's address in netns ratlab: our data and our
// TCP acks vanish, the kernel's data still arrives), the kernel's TCP
// socket of the connection is aborted (ss -K in the VM: an RST to Go),
// and the neighbour entry is restored. Both sides reconnect and
// retransmit what TCP had not acknowledged, flagged RETRANSMITTED;
// receivers drop what they had already. Nothing may be lost or
// duplicated in either direction, and the counts are checked one by one:
// Go retransmitted the messages the black hole kept from the kernel, and
// dropped as duplicates the kernel's messages it had received but whose
// acks the black hole ate; the kernel dropped no more duplicates than Go
// retransmitted.
func TestRDSTCPResetMidStream(t *testing.T) {
	ctx, _, peer := rdsTest(t, 5*time.Minute)
	const n = "4000"
	sink := kernelJob(ctx, t, "--timeout", "120", "sink", rdsVM.ip, "4019", "0")
	t.Cleanup(func() {
		exec.Command("ip", "netns", "exec", "ratlab", "ip", "neigh", "del", rdsVM.ip, "dev", "br77").Run()
	})
	reset := fmt.Sprintf("ip neigh replace %[1]s lladdr 02:00:00:00:00:99 dev br77 nud permanent && sleep 0.5; "+
		"%[2]s exec --name %[3]s -- ss -K -tn dst %[4]s sport = :16385; st=$?; ip neigh del %[1]s dev br77; exit $st",
		rdsVM.ip, filepath.Join(lab.dir, "vm.sh"), rdsVM.name, hostIP)
	goSide := startJob(t, nsExec(ctx, t, peer, "stream", "-bind", hostAddr(4018), "-to", kernAddr(4019),
		"-n", "2000", "-size", "2048", "-pace", "1ms", "-recv", n, "-reset-after", "500", "-reset-cmd", reset, "-timeout", "200s"))
	// The kernel paces too, so that its stream is in flight when the black hole opens.
	source := kernelJob(ctx, t, "--timeout", "120", "source", rdsVM.ip, "4020", hostAddr(4018), n, "2048", "--pace", "0.002")
	t.Cleanup(func() {
		if t.Failed() {
			info, _ := rdsVM.exec(context.Background(), t, "python3", kernelPeer(), "info", rdsVM.ip, "--counters").CombinedOutput()
			t.Logf("kernel source:\n%s\nkernel info:\n%s", source.out.String(), info)
		}
	})
	finish(ctx, t, goSide, sink, []string{"reset after 500: <nil>", "reset done at message", "received " + n + " in order",
		"all acknowledged", "OK"}, []string{"kernel sink ok"})
	if err := source.wait(ctx); err != nil {
		t.Fatalf("kernel source: %v\n%s", err, source.out.String())
	}
	gout := goSide.out.String()
	sent := regexp.MustCompile(`(?m)^sent (\d+)$`).FindStringSubmatch(gout)
	if sent == nil || !strings.Contains(sink.out.String(), "kernel sink ok "+sent[1]+" in order") {
		t.Errorf("Go sent %v, the kernel's count differs", sent)
	}
	if m := regexp.MustCompile(`Resets:(\d+)`).FindStringSubmatch(gout); m == nil || m[1] == "0" {
		t.Errorf("the Go side saw no reset: %v", m)
	}
	retrans := goStat(t, gout, "SendRetransmit")
	dups := goStat(t, gout, "RecvDropOldSeq")
	info, err := rdsVM.exec(ctx, t, "python3", kernelPeer(), "info", rdsVM.ip, "--counters").CombinedOutput()
	if err != nil {
		t.Fatalf("info: %v\n%s", err, info)
	}
	kdups := kernelCounter(string(info), "recv_drop_old_seq")
	t.Logf("after the reset: Go retransmitted %d messages (the kernel dropped %d as duplicates); "+
		"Go dropped %d of the kernel's retransmissions as duplicates", retrans, kdups, dups)
	if retrans == 0 {
		t.Errorf("Go retransmitted nothing: the black hole kept no message from the kernel")
	}
	if dups == 0 {
		t.Errorf("Go dropped no duplicate: the kernel resent nothing Go already had")
	}
	if kdups > retrans {
		t.Errorf("the kernel dropped %d duplicates, more than Go's %d retransmissions", kdups, retrans)
	}
}

// goStat returns a NodeStats field from rdspeer's "node ... stats {...}" line.
func goStat(t *testing.T, out, field string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^node \S+ stats \{.*\b` + field + `:(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %s in the Go side's stats:\n%s", field, out)
	}
	v, _ := strconv.ParseUint(m[1], 10, 64)
	return v
}

// kernelCounter returns an RDS counter from "info --counters" output (the
// script prints only the non-zero ones).
func kernelCounter(out, name string) uint64 {
	m := regexp.MustCompile(`(?m)^kernel counter ` + name + ` (\d+)$`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseUint(m[1], 10, 64)
	return v
}

// TestRDSTCPCongestion: the kernel socket (SO_RCVBUF 64 KiB) does not
// read, so the kernel marks its port congested and sends its map; the
// Go sender gets ENOBUFS, tells the kernel to drain, waits for the
// RDS_CMSG_CONG_UPDATE the kernel's next map produces, and resumes for
// 2000 more messages. All arrive in order.
func TestRDSTCPCongestion(t *testing.T) {
	ctx, _, peer := rdsTest(t, 3*time.Minute)
	kernel := kernelJob(ctx, t, "--timeout", "120", "sink", rdsVM.ip, "4022", "0", "--ctl", "4023", "--rcvbuf", "65536")
	goSide := startJob(t, nsExec(ctx, t, peer, "congest", "-bind", hostAddr(4021), "-to", kernAddr(4022),
		"-ctl", kernAddr(4023), "-n", "2000", "-size", "1024", "-timeout", "150s"))
	finish(ctx, t, goSide, kernel, []string{"ENOBUFS at message", "cong update", "OK"},
		[]string{"draining", "kernel sink ok", "kernel ctl b'enobufs"})
	// The kernel got exactly what Go sent, in order.
	sent := regexp.MustCompile(`sent (\d+) enobufs`).FindStringSubmatch(goSide.out.String())
	if sent == nil || !strings.Contains(kernel.out.String(), "kernel sink ok "+sent[1]+" in order") {
		t.Errorf("Go sent %v, the kernel's count differs", sent)
	}
	// The kernel's maps: the one every new connection starts with, the
	// one that congested the port and at least one that cleared it (the
	// sends after the last ENOBUFS went through only because of it).
	if n := goStat(t, goSide.out.String(), "CongUpdateReceived"); n < 3 {
		t.Errorf("Go received %d congestion maps from the kernel, want at least 3", n)
	}
}

// TestRDSTCPKernelCongestion is TestRDSTCPCongestion the other way: a
// Go socket (SO_RCVBUF 64 KiB) does not read, so Go marks its port
// congested and sends its map; the kernel's non-blocking sender, which
// keeps sending until that map has arrived however long a loaded VM
// takes, gets ENOBUFS, tells Go to drain, and retries until the map Go
// sends when its queue falls below half of SO_RCVBUF clears the port;
// then it sends 2000 more. The kernel's cong_update_received must have
// grown between its first ENOBUFS and its resume (the resume came from
// our map), and every message arrives in order.
func TestRDSTCPKernelCongestion(t *testing.T) {
	ctx, _, peer := rdsTest(t, 3*time.Minute)
	goSide := startJob(t, nsExec(ctx, t, peer, "congrecv", "-bind", hostAddr(4027), "-ctl", hostAddr(4028),
		"-rcvbuf", "65536", "-timeout", "150s"))
	waitJobOutput(ctx, t, goSide, "go ready")
	kernel := kernelJob(ctx, t, "--timeout", "120", "congsource", rdsVM.ip, "4029", hostAddr(4027), "2000", "1024",
		"--ctl", hostAddr(4028))
	finish(ctx, t, goSide, kernel, []string{"congested, draining", "in order", "kernel reports: enobufs", "OK"},
		[]string{"kernel ENOBUFS at message", "kernel resumed at message", "kernel congsource sent"})
	kout := kernel.out.String()
	// The kernel sends until its first ENOBUFS and 2000 more: Go got
	// exactly that many, in order.
	sent := regexp.MustCompile(`kernel congsource sent (\d+) `).FindStringSubmatch(kout)
	if sent == nil || !strings.Contains(goSide.out.String(), "received "+sent[1]+" in order") {
		t.Errorf("the kernel sent %v, Go's count differs", sent)
	}
	at := regexp.MustCompile(`kernel ENOBUFS at message \d+ cong_update_received (\d+)`).FindStringSubmatch(kout)
	resumed := regexp.MustCompile(`kernel resumed at message \d+ after \d+ ENOBUFS cong_update_received (\d+)`).FindStringSubmatch(kout)
	if at == nil || resumed == nil {
		t.Fatalf("kernel output lacks the counters:\n%s", kout)
	}
	a, _ := strconv.Atoi(at[1])
	r, _ := strconv.Atoi(resumed[1])
	if r <= a {
		t.Errorf("the kernel resumed without a new map from Go (cong_update_received %d, then %d)", a, r)
	}
	if goStat(t, goSide.out.String(), "CongUpdateSent") < 2 {
		t.Errorf("Go sent fewer than two congestion maps (congested, uncongested)")
	}
}

// TestRDSTCPCancelSentTo: between messages to port B, Go queues 16 MiB
// to port A and cancels them at once with RDS_CANCEL_SENT_TO. The kernel
// must see on A a gap-free prefix of them followed by the END marker
// sent after the cancel, and every message to B.
func TestRDSTCPCancelSentTo(t *testing.T) {
	ctx, _, peer := rdsTest(t, 3*time.Minute)
	kernel := kernelJob(ctx, t, "cancelsink", rdsVM.ip, "4025", "4026", "20")
	goSide := startJob(t, nsExec(ctx, t, peer, "cancel", "-bind", hostAddr(4024), "-to", kernAddr(4025),
		"-to2", kernAddr(4026), "-n", "256", "-size", "65536", "-n2", "20"))
	finish(ctx, t, goSide, kernel, []string{"cancelled:", "all acknowledged", "OK"},
		[]string{"then END", "kernel cancelsink ok 20"})
	m := regexp.MustCompile(`prefix (\d+) then END`).FindStringSubmatch(kernel.out.String())
	if m == nil || m[1] == "256" {
		t.Errorf("the cancel dropped nothing (kernel got %v of 256): nothing was tested", m)
	}
}

// TestRDSTCPMultipath: the Go node announces NPATHS 8, the 6.1 kernel
// answers 8, and Go (the smaller address) opens the other seven paths;
// 32 sockets spread over them. The kernel lists 8 TCP sockets to Go, and
// its replies (hashed by socket over its 8 paths) reach Go over more
// than one path. Go holds its connections until the test has read the
// kernel's view of them (rdspeer -hold; stdin closed afterwards).
//
// The replies that used to go missing now and then were discarded by the
// kernel itself when the script closed its sockets before the lanes they
// were queued on came up; the script now drains first
// (docs/INTEROP-FINDINGS.md §6). A 6.1 kernel has no SPORT_IDX, so it puts
// each lane on its first free slot rather than on the lane Go meant.
func TestRDSTCPMultipath(t *testing.T) {
	ctx, _, peer := rdsTest(t, 2*time.Minute)
	resetKernelConns(ctx, t)
	kernel := kernelJob(ctx, t, "ports", rdsVM.ip, "4200", "32")
	cmd := nsExec(ctx, t, peer, "ports", "-paths", "8", "-addr", hostIP, "-base", "4100",
		"-n", "32", "-to", rdsVM.ip, "-tbase", "4200", "-timeout", "60s", "-hold")
	hold, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	goSide := startJob(t, cmd)
	defer hold.Close()
	kerr := kernel.wait(ctx)
	// Go is done (or has given up) once it holds; then the kernel's view.
	waitJobOutput(ctx, t, goSide, "holding")
	// --counters also lists the messages the kernel still holds per path.
	info, err := rdsVM.exec(ctx, t, "python3", kernelPeer(), "info", rdsVM.ip, "--counters").CombinedOutput()
	hold.Close()
	t.Logf("kernel info:\n%s", info)
	if err != nil {
		t.Fatalf("info: %v", err)
	}
	if kerr != nil {
		t.Fatalf("kernel: %v\n%s\nGo side:\n%s", kerr, kernel.out.String(), goSide.out.String())
	}
	finish(ctx, t, goSide, kernel, []string{"ports ok 32", "npaths 8", "OK"}, []string{"kernel ports ok 32"})
	if c := strings.Count(string(info), "-> "+hostIP+":"); c != 8 {
		t.Errorf("kernel has %d TCP sockets to Go, want 8", c)
	}
	// Sequence numbers start at 1 on every path: next_rx above 1 means
	// the kernel sent a sequenced message there (path 0 always carries
	// the probe exchange).
	used := 0
	for _, m := range regexp.MustCompile(`(?m)^path \d+ up true ups \d+ next_tx \d+ next_rx (\d+)`).FindAllStringSubmatch(goSide.out.String(), -1) {
		if rx, _ := strconv.Atoi(m[1]); rx > 1 {
			used++
		}
	}
	if used < 2 {
		t.Errorf("the kernel's messages came over %d of Go's paths (one is path 0's probe exchange), want several", used)
	}
}

// resetKernelConns drops every RDS/TCP path of the VM kernel (writing an
// rds_tcp buffer sysctl runs rds_tcp_sysctl_reset; 0, the autotuning
// default, cannot be written back, so it sets 4 MiB), so that the test
// starts with every path down. The kernel keeps the connection itself,
// with its path count and sequence numbers; the new Go process's GEN_NUM
// makes it restart the sequence numbers (rds_conn_peer_gen_update).
func resetKernelConns(ctx context.Context, t *testing.T) {
	t.Helper()
	out, err := rdsVM.exec(ctx, t, "sysctl", "-w", "net.rds.tcp.rds_tcp_rcvbuf=4194304").CombinedOutput()
	if err != nil {
		t.Fatalf("sysctl: %v\n%s", err, out)
	}
}

// waitJobOutput waits until a job has printed s.
func waitJobOutput(ctx context.Context, t *testing.T, j *job, s string) {
	t.Helper()
	for !strings.Contains(j.out.String(), s) {
		select {
		case <-j.done:
			t.Fatalf("job ended (%v) before printing %q:\n%s", j.err, s, j.out.String())
		case <-ctx.Done():
			t.Fatalf("no %q: %v\n%s", s, ctx.Err(), j.out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
