package rping

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/godapl/godapl/verbs"
)

// Serve runs rping's server for one connection: it accepts the first
// request on l, answers pings until the client disconnects and returns nil
// then. The caller owns l.
func Serve(ctx context.Context, dev verbs.Device, l verbs.Listener, cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return err
	}
	req, err := l.Accept(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("rdma_get_request: %w", err)
	}
	return serveConn(ctx, dev, req, &cfg, newOutput(&cfg))
}

// ServePersistent is rping -P: it accepts requests on l until ctx ends,
// serving each connection on a goroutine of its own, and returns once
// every connection has ended. A failed connection is reported on Stderr
// and does not stop the others. It returns the context's cause when ctx
// ends and an error if l fails.
func ServePersistent(ctx context.Context, dev verbs.Device, l verbs.Listener, cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return err
	}
	o := newOutput(&cfg)
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		req, err := l.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("rdma_get_request: %w", err)
		}
		conns.Go(func() {
			if err := serveConn(ctx, dev, req, &cfg, o); err != nil && ctx.Err() == nil {
				o.err.printf("rping server (client %s): %v\n", req.RemoteAddr(), err)
			}
		})
	}
}

// serveConn sets up, accepts and serves one connection.
func serveConn(ctx context.Context, dev verbs.Device, req verbs.ConnRequest, cfg *Config, o *output) error {
	o.debugf("accepting client connection request from %s\n", req.RemoteAddr())
	e, err := newEndpoint(dev, cfg, o, "server")
	if err != nil {
		req.Reject(nil)
		return err
	}
	defer e.close()
	var p verbs.ConnParam // rdma_accept(id, NULL): the request's IRD and ORD
	if cfg.SelfQP {
		p = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1}
	}
	conn, err := req.Accept(e.qp, p)
	if err != nil {
		return fmt.Errorf("rdma_accept: %w", err)
	}
	e.attach(ctx, conn)
	return e.runServer()
}

// runServer is rping_test_server. The client ending the connection
// between pings is the normal end; anywhere else it is a failure.
func (e *endpoint) runServer() error {
	for ping := 0; ; ping++ {
		ev, err := e.next("RDMA_READ_ADV")
		if errors.Is(err, ErrDisconnected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ping %d: wait for RDMA_READ_ADV: %w", ping, err)
		}
		if ev != evRecv {
			return fmt.Errorf("ping %d: wait for RDMA_READ_ADV: got %s", ping, ev)
		}
		e.o.debugf("server received sink adv\n")

		// RDMA Read the client's source into our buffer.
		if err := e.postRDMA(verbs.OpRDMARead, Info(e.info[:])); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		e.o.debugf("server posted rdma read req \n")
		if err := e.expect(evReadDone, "RDMA_READ_COMPLETE", ping); err != nil {
			return err
		}
		e.o.debugf("server received read complete\n")
		if e.cfg.Verbose {
			e.o.out.line("server ping data: ", cString(e.rdmaBuf))
		}
		if err := e.post(e.sendWR[:]); err != nil { // go ahead
			return err
		}
		e.o.debugf("server posted go ahead\n")

		// RDMA Write it back into the client's sink.
		if err := e.expect(evRecv, "RDMA_WRITE_ADV", ping); err != nil {
			return err
		}
		e.o.debugf("server received sink adv\n")
		if err := e.postRDMA(verbs.OpRDMAWrite, Info(e.info[:])); err != nil {
			return fmt.Errorf("ping %d: %w", ping, err)
		}
		if err := e.expect(evWriteDone, "RDMA_WRITE_COMPLETE", ping); err != nil {
			return err
		}
		e.o.debugf("server rdma write complete \n")
		if err := e.post(e.sendWR[:]); err != nil { // go ahead
			return err
		}
		e.o.debugf("server posted go ahead\n")
	}
}

// postRDMA posts the server's RDMA Read of the advertised buffer, or its
// RDMA Write into it. A Read takes the advertised size, which must fit our
// buffer; a Write sends the C string in our buffer with its zero
// (strlen+1), as rping does.
func (e *endpoint) postRDMA(op verbs.Opcode, adv Info) error {
	e.o.debugf("Received rkey %x addr %x len %d from peer\n", adv.RKey(), adv.Buf(), adv.Size())
	n := int(min(adv.Size(), uint32(MaxSize)+1))
	if op == verbs.OpRDMAWrite {
		n = min(len(cString(e.rdmaBuf))+1, len(e.rdmaBuf))
	} else if n > len(e.rdmaBuf) {
		return fmt.Errorf("client's size %d exceeds this server's size %d (both sides need the same -S)", adv.Size(), len(e.rdmaBuf))
	}
	wr := &e.rdmaWR[0]
	wr.Opcode, wr.RKey, wr.RemoteAddr = op, adv.RKey(), adv.Buf()
	wr.SGL[0].Length = uint32(n)
	if op == verbs.OpRDMAWrite {
		e.o.debugf("rdma write from lkey %x laddr %x len %d\n", wr.SGL[0].LKey, wr.SGL[0].Addr, n)
	}
	return e.post(e.rdmaWR[:])
}
