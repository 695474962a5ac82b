package perf

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// The TCP baseline runs the same three workloads over one plain TCP
// connection, the way an application without RDMA would: bandwidth as a
// stream of Size-byte writes, message rate as Size-byte records batched
// through a 64 KiB buffered writer (as the soft-iWARP transmitter batches
// FPDUs), and round trip as a write followed by a read of the echo.

const tcpBuf = 64 << 10

// TCPServer is the baseline's server.
type TCPServer struct {
	l  net.Listener
	wg sync.WaitGroup
	mu sync.Mutex
	cs map[net.Conn]struct{}
}

// ServeTCP listens on addr and serves baseline connections until Close.
func ServeTCP(addr string) (*TCPServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &TCPServer{l: l, cs: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr is the listening address.
func (s *TCPServer) Addr() net.Addr { return s.l.Addr() }

// Close stops the server and waits for its connections.
func (s *TCPServer) Close() error {
	err := s.l.Close()
	s.mu.Lock()
	for c := range s.cs {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *TCPServer) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.l.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.cs[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			serveTCP(c)
			s.mu.Lock()
			delete(s.cs, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func serveTCP(c net.Conn) {
	var hdr [requestLen]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	r, err := parseRequest(hdr[:])
	if err != nil {
		return
	}
	br := bufio.NewReaderSize(c, tcpBuf)
	switch r.test {
	case TestWrite, TestSendRate:
		// Count bytes until the client half-closes, then report them.
		n, _ := io.Copy(io.Discard, br)
		var out [8]byte
		binary.BigEndian.PutUint64(out[:], uint64(n))
		c.Write(out[:])
	case TestPingPong:
		buf := make([]byte, r.size)
		for {
			if _, err := io.ReadFull(br, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}
}

// RunTCP runs one baseline test against a TCPServer.
func RunTCP(ctx context.Context, addr string, p Params) (*Result, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.TCPConn)
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	var hdr [requestLen]byte
	req := request{test: p.Test, size: uint32(p.Size), depth: uint32(max(1, p.Depth))}
	if _, err := c.Write(req.append(hdr[:0])); err != nil {
		return nil, err
	}
	buf := make([]byte, p.Size)
	start := time.Now()
	var msgs uint64
	switch p.Test {
	case TestWrite, TestSendRate:
		w := io.Writer(c)
		var bw *bufio.Writer
		if p.Test == TestSendRate {
			bw = bufio.NewWriterSize(c, tcpBuf)
			w = bw
		}
		for p.more(start, msgs) {
			k := p.left(64, msgs)
			for i := 0; i < k; i++ {
				if _, err := w.Write(buf); err != nil {
					return nil, err
				}
			}
			msgs += uint64(k)
		}
		if bw != nil {
			if err := bw.Flush(); err != nil {
				return nil, err
			}
		}
		if err := c.CloseWrite(); err != nil {
			return nil, err
		}
		var out [8]byte
		if _, err := io.ReadFull(c, out[:]); err != nil {
			return nil, err
		}
		if got := binary.BigEndian.Uint64(out[:]); got != msgs*uint64(p.Size) {
			return nil, fmt.Errorf("perf: tcp server counted %d bytes, sent %d", got, msgs*uint64(p.Size))
		}
		return &Result{Test: p.Test, Size: p.Size, Duration: time.Since(start), Bytes: msgs * uint64(p.Size), Msgs: msgs}, nil
	case TestPingPong:
		rtts := make([]time.Duration, 0, 1<<16)
		for t0 := start; p.more(start, msgs); t0 = time.Now() {
			if _, err := c.Write(buf); err != nil {
				return nil, err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return nil, err
			}
			rtts = append(rtts, time.Since(t0))
			msgs++
		}
		slices.Sort(rtts)
		return &Result{Test: p.Test, Size: p.Size, Duration: time.Since(start), Bytes: msgs * uint64(p.Size), Msgs: msgs, RTTs: rtts}, nil
	}
	return nil, errors.New("perf: unknown test")
}
