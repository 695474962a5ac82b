//go:build rdmacore

package rdmacore

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestPortEvents takes the device's network interface down and up again
// (GODAPL_RDMACORE_NETDEV names it; it needs root and a device, such as
// rxe, whose port follows its interface) and checks that the port
// events arrive with the port number, that Ports follows them, and that
// a connection over the port ends with a verbs error, leaking nothing.
func TestPortEvents(t *testing.T) {
	netdev := os.Getenv("GODAPL_RDMACORE_NETDEV")
	if netdev == "" {
		t.Skip("set GODAPL_RDMACORE_NETDEV to the device's interface (as root, on a machine where it may go down)")
	}
	verbstest.CheckLeaks(t)
	name, addr := testDevice(t)
	a, b := openPair(t, name)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	link := func(state string) {
		t.Helper()
		if out, err := exec.Command("ip", "link", "set", netdev, state).CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s %s: %v %s", netdev, state, err, out)
		}
	}
	t.Cleanup(func() { exec.Command("ip", "link", "set", netdev, "up").Run() })
	sa, sb := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
	verbstest.RoundTrip(t, sa, sb, 64, 1, 10*time.Second)

	const timeout = 60 * time.Second
	wait := func(want verbs.AsyncEventType) {
		t.Helper()
		ev := verbstest.WaitAsyncEvent(t, a, timeout, func(ev verbs.AsyncEvent) bool { return ev.Type == want })
		if ev.Port != 1 || ev.QP != nil || ev.CQ != nil || ev.SRQ != nil {
			t.Errorf("%v names port %d, QP %v, CQ %v, SRQ %v", ev.Type, ev.Port, ev.QP, ev.CQ, ev.SRQ)
		}
	}
	link("down")
	wait(verbs.EventPortErr)
	if st := a.(*Device).Ports()[0].State; st != PortDown {
		t.Errorf("port state after PORT_ERR: %v, want DOWN", st)
	}
	// A Send over the downed port either completes (the device still
	// reaches itself) or fails with a status; the connection may end.
	verbstest.MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	verbstest.MustPostSend(t, sb.QP, verbs.SendWR{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}})
	wc := verbstest.PollOne(t, sb.CQ, timeout)
	t.Logf("send over a downed port: %v", wc.Status)
	if wc.ID != 3 {
		t.Errorf("completion of request %d, want 3", wc.ID)
	}
	link("up")
	wait(verbs.EventPortActive)
	if st := a.(*Device).Ports()[0].State; st != PortActive {
		t.Errorf("port state after PORT_ACTIVE: %v, want ACTIVE", st)
	}
}
