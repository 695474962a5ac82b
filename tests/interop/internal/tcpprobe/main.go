// Command tcpprobe is the host-side peer for the interop tests of
// handshakes that need no verbs code: it connects to a TCP address, writes
// bytes given in hex, reads an exact number of bytes back and prints
//
//	local <ip:port>
//	reply <hex>
//
// The tests run it inside netns ratlab through `vm.sh nsexec` (the test
// process itself lives outside the namespace), or inside the lab VM, and
// judge the bytes themselves; tcpprobe knows nothing about MPA. The local
// address tells the test which side of the bridge the connection came from.
// On a short read it still prints what arrived, then fails.
package main

import (
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	addr := flag.String("addr", "", "TCP address to connect to, host:port")
	send := flag.String("send", "", "bytes to write after connecting, in hex")
	n := flag.Int("read", 0, "number of bytes to read back")
	timeout := flag.Duration("timeout", 15*time.Second, "deadline for connect, write and read together")
	flag.Parse()
	if *addr == "" || *n < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := probe(os.Stdout, *addr, *send, *n, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "tcpprobe:", err)
		os.Exit(1)
	}
}

// probe runs one exchange against addr and reports it on w.
func probe(w io.Writer, addr, sendHex string, n int, timeout time.Duration) error {
	msg, err := hex.DecodeString(sendHex)
	if err != nil {
		return fmt.Errorf("-send: %w", err)
	}
	deadline := time.Now().Add(timeout)
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	fmt.Fprintf(w, "local %s\n", conn.LocalAddr())
	if _, err := conn.Write(msg); err != nil {
		return fmt.Errorf("write %d bytes: %w", len(msg), err)
	}
	buf := make([]byte, n)
	got, err := io.ReadFull(conn, buf)
	fmt.Fprintf(w, "reply %x\n", buf[:got])
	if err != nil {
		return fmt.Errorf("read %d of %d bytes: %w", got, n, err)
	}
	return nil
}
