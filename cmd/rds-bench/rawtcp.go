package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"
)

// The rawtcp backend runs the same workload over one plain TCP
// connection (a 4-byte length before each message, 64 KiB buffered
// reader and writer, no RDS at all): the ceiling for any transport
// written in Go over the same kernel TCP, measured in the same run.
// The receiver listens on the -bind address, the sender connects to -to.

func rawRx(bind netip.AddrPort, buf []byte, mode, ready string) error {
	ln, err := net.Listen("tcp4", bind.String())
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := markReady(ready); err != nil {
		return err
	}
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	var bytes float64
	var t0 time.Time
	for {
		n, err := rawRead(br, buf)
		if err != nil {
			return err
		}
		if n == 1 {
			window.finish()
		}
		if n == 1 || mode == "pingpong" {
			if err := rawWrite(bw, buf[:n], true); err != nil {
				return err
			}
			if n == 1 {
				break
			}
			continue
		}
		if msgs == 0 {
			window.begin()
			t0 = time.Now()
		}
		msgs++
		bytes += float64(n)
	}
	if mode == "tput" {
		dt := time.Since(t0).Seconds()
		fmt.Printf("tput size=%d msgs=%d secs=%.3f MB/s=%.1f msgs/s=%.0f\n", len(buf), msgs, dt, bytes/dt/1e6, float64(msgs)/dt)
	}
	return nil
}

func rawTx(to netip.AddrPort, p []byte, mode string, d time.Duration, iters int) error {
	c, err := net.Dial("tcp4", to.String())
	if err != nil {
		return err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	br := bufio.NewReaderSize(c, 64<<10)
	bw := bufio.NewWriterSize(c, 64<<10)
	buf := make([]byte, len(p)+64)
	if mode == "tput" {
		end := time.Now().Add(d)
		for ; msgs&63 != 0 || time.Now().Before(end); msgs++ {
			if err := rawWrite(bw, p, false); err != nil {
				return err
			}
		}
	} else {
		rtt := make([]float64, 0, iters)
		for i := -10; i < iters; i++ {
			t0 := time.Now()
			if err := rawWrite(bw, p, true); err != nil {
				return err
			}
			if _, err := rawRead(br, buf); err != nil {
				return err
			}
			if i >= 0 {
				rtt = append(rtt, time.Since(t0).Seconds()*1e6)
			}
		}
		defer printRTT(len(p), rtt)
	}
	if err := rawWrite(bw, []byte("E"), true); err != nil {
		return err
	}
	for {
		n, err := rawRead(br, buf)
		if err != nil || n == 1 {
			return err
		}
	}
}

func rawWrite(bw *bufio.Writer, p []byte, flush bool) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(p)))
	bw.Write(hdr[:])
	bw.Write(p)
	if flush {
		return bw.Flush()
	}
	return nil
}

func rawRead(br *bufio.Reader, buf []byte) (int, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > len(buf) {
		return 0, fmt.Errorf("rawtcp: %d-byte message for a %d-byte buffer", n, len(buf))
	}
	_, err := io.ReadFull(br, buf[:n])
	return n, err
}

// printRTT prints the round-trip line shared by all backends.
func printRTT(size int, rtt []float64) {
	var sum float64
	for _, v := range rtt {
		sum += v
	}
	slices.Sort(rtt)
	n := len(rtt)
	fmt.Printf("pingpong size=%d iters=%d rtt_us avg=%.1f min=%.1f p50=%.1f p99=%.1f\n", size, n,
		sum/float64(n), rtt[0], rtt[n/2], rtt[n*99/100])
}
