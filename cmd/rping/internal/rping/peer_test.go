package rping

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/verbs"
)

// Tests in this file play a misbehaving peer with the engine's own
// endpoint, driven step by step, against a real Client or Serve.

// rawPeer is a connected endpoint the test drives by hand, plus a 64-byte
// registered buffer for messages of any length.
type rawPeer struct {
	*endpoint
	raw   []byte
	rawMR verbs.MR
}

func newRawPeer(t *testing.T, dev verbs.Device, side string) *rawPeer {
	t.Helper()
	cfg := Config{Size: MaxSize}.withDefaults()
	e, err := newEndpoint(dev, &cfg, newOutput(&cfg), side)
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPeer{endpoint: e, raw: make([]byte, 64)}
	if p.rawMR, err = e.reg(p.raw, 0); err != nil {
		e.free()
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return p
}

// sendRaw sends msg (at most 64 bytes) as one message.
func (p *rawPeer) sendRaw(t *testing.T, msg []byte) {
	t.Helper()
	copy(p.raw, msg)
	wr := []verbs.SendWR{{ID: wrSendInfo, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{verbs.SGEOf(p.rawMR, 0, len(msg))}}}
	if _, err := p.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
}

// rawClient connects a raw peer to l.
func rawClient(ctx context.Context, t *testing.T, f fabric, l verbs.Listener) *rawPeer {
	t.Helper()
	dev := f.open(t)
	p := newRawPeer(t, dev, "client")
	conn, err := dev.Connect(ctx, p.qp, l.Addr().String(), verbs.ConnParam{})
	if err != nil {
		t.Fatal(err)
	}
	p.attach(ctx, conn)
	return p
}

// serverAgainstRaw starts Serve on a fresh listener and connects a raw
// client to it.
func serverAgainstRaw(t *testing.T, f fabric, cfg Config) (*rawPeer, <-chan error) {
	t.Helper()
	ctx := testContext(t)
	sdev, l := f.listen(t)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, sdev, l, cfg) }()
	return rawClient(ctx, t, f, l), done
}

func TestServerBogusLength(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		for _, c := range []struct {
			name string
			len  int
			want string
		}{
			{"short", 8, "Received bogus data, size 8"},
			{"empty", 0, "Received bogus data, size 0"},
			// Longer than the posted receive: the receive itself fails
			// (local length error) and the stream is terminated.
			{"long", 20, "cq completion failed status 1"},
		} {
			t.Run(c.name, func(t *testing.T) {
				checkLeaks(t)
				var out testutil.LockedBuffer
				peer, done := serverAgainstRaw(t, f, Config{Size: DefaultSize, Stderr: &out})
				peer.sendRaw(t, make([]byte, c.len))
				err := <-done
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("server: %v, want %q", err, c.want)
				}
				select {
				case <-peer.conn.Done():
				case <-time.After(testTimeout):
					t.Fatal("the failed server left the connection up")
				}
			})
		}
	})
}

// A server that goes away after the first ping: a client with a count
// fails, a client pinging forever ends cleanly.
func TestServerDisconnectsEarly(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		for _, count := range []int{5, 0} {
			t.Run(fmt.Sprint("C", count), func(t *testing.T) { testServerDisconnectsEarly(t, f, count) })
		}
	})
}

func testServerDisconnectsEarly(t *testing.T, f fabric, count int) {
	checkLeaks(t)
	ctx := testContext(t)
	addr, done := afterReadAdv(ctx, t, f, func(e *endpoint) error { return e.conn.Disconnect() })
	err := Client(ctx, f.open(t), addr, Config{Size: DefaultSize, Count: count})
	if srvErr := <-done; srvErr != nil {
		t.Fatal(srvErr)
	}
	switch {
	case count > 0 && !errors.Is(err, ErrDisconnected):
		t.Errorf("-C %d: client: %v, want a disconnect error", count, err)
	case count == 0 && err != nil:
		t.Errorf("-C 0: client: %v, want nil", err)
	}
}

func TestClientBogusGoAhead(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		ctx := testContext(t)
		addr, done := afterReadAdv(ctx, t, f, func(e *endpoint) error {
			e.sendWR[0].SGL[0].Length = 8
			if err := e.post(e.sendWR[:]); err != nil {
				return err
			}
			_, err := e.next("disconnect")
			if !errors.Is(err, ErrDisconnected) {
				return err
			}
			return nil
		})
		err := Client(ctx, f.open(t), addr, Config{Size: DefaultSize, Count: 1})
		if err == nil || !strings.Contains(err.Error(), "Received bogus data, size 8") {
			t.Errorf("client: %v", err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// A server that echoes one byte wrong: -V catches it.
func TestClientDataMismatch(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		for _, validate := range []bool{true, false} {
			checkLeaks(t)
			ctx := testContext(t)
			addr, done := afterReadAdv(ctx, t, f, func(e *endpoint) error {
				if err := e.postRDMA(verbs.OpRDMARead, Info(e.info[:])); err != nil {
					return err
				}
				if err := e.expect(evReadDone, "RDMA_READ_COMPLETE", 0); err != nil {
					return err
				}
				e.rdmaBuf[20] ^= 0x01
				if err := e.post(e.sendWR[:]); err != nil {
					return err
				}
				if err := e.expect(evRecv, "RDMA_WRITE_ADV", 0); err != nil {
					return err
				}
				if err := e.postRDMA(verbs.OpRDMAWrite, Info(e.info[:])); err != nil {
					return err
				}
				if err := e.expect(evWriteDone, "RDMA_WRITE_COMPLETE", 0); err != nil {
					return err
				}
				if err := e.post(e.sendWR[:]); err != nil {
					return err
				}
				if _, err := e.next("disconnect"); !errors.Is(err, ErrDisconnected) {
					return err
				}
				return nil
			})
			err := Client(ctx, f.open(t), addr, Config{Size: DefaultSize, Count: 1, Validate: validate})
			if validate && (err == nil || err.Error() != "data mismatch!") {
				t.Errorf("-V: client: %v, want data mismatch!", err)
			}
			if !validate && err != nil {
				t.Errorf("without -V: client: %v", err)
			}
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	})
}

// afterReadAdv serves one client on a fresh listener of f with
// fakeServer: the script then runs once the client's RDMA_READ_ADV has
// arrived. It returns the address to connect to and the server's result.
func afterReadAdv(ctx context.Context, t *testing.T, f fabric, then func(*endpoint) error) (addr string, done <-chan error) {
	sdev, l := f.listen(t)
	res := make(chan error, 1)
	go func() {
		res <- fakeServer(ctx, t, sdev, l, func(e *endpoint) error {
			if _, err := e.next("RDMA_READ_ADV"); err != nil {
				return err
			}
			return then(e)
		})
	}()
	return l.Addr().String(), res
}

// fakeServer accepts one connection on l with the engine's endpoint and
// runs script on it instead of the rping server loop.
func fakeServer(ctx context.Context, t *testing.T, dev verbs.Device, l verbs.Listener, script func(*endpoint) error) error {
	req, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	cfg := Config{Size: DefaultSize}.withDefaults()
	e, err := newEndpoint(dev, &cfg, newOutput(&cfg), "server")
	if err != nil {
		return err
	}
	defer e.close()
	conn, err := req.Accept(e.qp, verbs.ConnParam{})
	if err != nil {
		return err
	}
	e.attach(ctx, conn)
	return script(e)
}

// FuzzServerMessage sends one message of arbitrary bytes to an rping
// server as the client's first Info: whatever it holds, the server must
// end with an error or carry on, never panic or hang.
func FuzzServerMessage(f *testing.F) {
	good := make(Info, InfoLen)
	good.SetSize(DefaultSize)
	f.Add([]byte(good))
	f.Add([]byte{})
	f.Add(make([]byte, 8))
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 64 {
			msg = msg[:64]
		}
		peer, done := serverAgainstRaw(t, memFabric(), Config{Size: DefaultSize})
		peer.sendRaw(t, msg)
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("the server accepted a first message that is no valid ping")
			}
		case <-time.After(time.Second):
			// Still serving: the message passed as an Info the server
			// could read, such as one of size 0 (a zero-length RDMA Read
			// needs no valid key). Hang up.
			peer.conn.Disconnect()
			<-done
		}
	})
}
