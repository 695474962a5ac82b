package rdsoverdat

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// eagerTransport looks up connections from the moment it is attached, as
// the dat transport's event goroutine does for a peer's connection
// request, until the test stops it.
type eagerTransport struct{ stop, done chan struct{} }

func (eagerTransport) Type() TransportType { return TransIB }
func (eagerTransport) Name() string        { return "eager" }

func (t eagerTransport) attach(n *rdsNode) (nodeTransport, error) {
	peer := netip.MustParseAddr("127.80.255.254")
	started := make(chan struct{})
	go func() {
		defer close(t.done)
		close(started)
		for {
			select {
			case <-t.stop:
				return
			default:
				n.Conn(peer, TransIB)
			}
		}
	}()
	<-started
	runtime.Gosched() // let it look while the stack publishes the transport
	return eagerNode{}, nil
}

type eagerNode struct{}

func (eagerNode) Connect(*connPath) {}
func (eagerNode) Kick(*connPath)    {}
func (eagerNode) Reset(*connPath)   {}
func (eagerNode) Close() error      { return nil }

// A node's transports are published under its lock: a transport may use
// the node (Node.Conn reads them) as soon as its Attach has started it,
// before the bind that creates the node returns. The race detector saw
// the dat transport's first connection request read them while the stack
// still wrote them (4 of 700 runs of TestDATAckSpaceFollowsPeerGeneration).
// Without the lock this test fails under -race (30 of 30 runs; 22 of 30
// with GOMAXPROCS=1).
func TestNodeTransportsPublishedUnderLock(t *testing.T) {
	leakCheck(t)
	tr := eagerTransport{stop: make(chan struct{}), done: make(chan struct{})}
	st := newTestStack(t, Config{Transports: []Transport{tr}})
	mustBind(t, st, ap(testAddrs(1)[0], 0))
	close(tr.stop)
	<-tr.done
}

// earlyTransport looks up one connection from a goroutine its Attach
// starts, as the tcp transport's accept loop does for a peer that
// connects the moment the node listens, and gives that lookup time to
// finish before Attach returns.
type earlyTransport struct{ got chan *connection }

func (earlyTransport) Type() TransportType { return TransIB }
func (earlyTransport) Name() string        { return "early" }

func (t earlyTransport) attach(n *rdsNode) (nodeTransport, error) {
	peer := netip.MustParseAddr("127.80.255.253")
	res := make(chan *connection, 1)
	go func() { res <- n.Conn(peer, TransIB) }()
	select {
	case c := <-res:
		t.got <- c // answered before the transport was published
	case <-time.After(50 * time.Millisecond):
		go func() { t.got <- <-res }()
	}
	return eagerNode{}, nil
}

// A peer's connection that arrives while the node is being created finds
// its transport: the lookup waits for Attach to be published instead of
// answering nil, which made the tcp transport reset the connection of a
// peer that dialled the moment a restarted node listened, and left that
// peer without a connection (TestTCPConnectWorkerSurvivesInstantFailure).
// Before, the lookup answered nil at once, every run.
func TestNodeConnDuringAttachWaits(t *testing.T) {
	leakCheck(t)
	tr := earlyTransport{got: make(chan *connection, 1)}
	st := newTestStack(t, Config{Transports: []Transport{tr}})
	mustBind(t, st, ap(testAddrs(1)[0], 0))
	if c := <-tr.got; c == nil {
		t.Fatal("Node.Conn during Attach found no transport")
	}
}
