// Command rds-cat exchanges RDS datagrams through rdsoverdat's tcp
// transport: the Go side of the kernel interoperability tests, and a
// small tool for poking at an RDS/TCP peer.
//
//	rds-cat -bind 192.168.77.1:4000 -echo -timeout 20s
//	rds-cat -bind 192.168.77.1:4001 -send 192.168.77.2:4002 -msg hi -count 3 -sizes 0,100,65536
//	rds-cat -bind 192.168.77.1:4003 -ping 192.168.77.2
//
// It prints one line per event ("recv", "reply", "pong", "sent") so that
// a test can compare it with the peer's view, and exits non-zero if an
// expected reply does not arrive before -timeout.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rds-cat:", err)
		os.Exit(1)
	}
}

func run() error {
	bind := flag.String("bind", "", "local RDS address ip:port (required)")
	echo := flag.Bool("echo", false, "answer every message with \"echo: \" + payload until -timeout")
	send := flag.String("send", "", "destination ip:port to send -count messages to, each expecting a reply")
	msg := flag.String("msg", "hello from rdsoverdat", "payload prefix of -send messages")
	count := flag.Int("count", 1, "messages to -send")
	sizes := flag.String("sizes", "", "comma-separated payload sizes for -send (overrides -msg length)")
	ping := flag.String("ping", "", "address to ping (RDS port 0) -count times")
	timeout := flag.Duration("timeout", 20*time.Second, "overall time limit")
	paths := flag.Int("paths", 1, "NPATHS to announce")
	flag.Parse()
	local, err := netip.ParseAddrPort(*bind)
	if err != nil {
		return fmt.Errorf("-bind: %w", err)
	}
	st := rdsoverdat.NewStack(rdsoverdat.Config{Transports: []rdsoverdat.Transport{
		rdsoverdat.TCP(rdsoverdat.TCPConfig{Paths: *paths})}})
	defer st.Close()
	s := st.Socket()
	s.SetOption(rdsoverdat.SendBuffer(4 << 20))
	s.SetOption(rdsoverdat.RecvBuffer(4 << 20))
	if err := s.Bind(local); err != nil {
		return err
	}
	end := time.Now().Add(*timeout)
	s.SetDeadline(end)
	buf := make([]byte, 1<<20+1)

	switch {
	case *ping != "":
		dst, err := netip.ParseAddr(*ping)
		if err != nil {
			return err
		}
		for i := range *count {
			t0 := time.Now()
			if _, err := s.SendTo(nil, netip.AddrPortFrom(dst, 0), 0); err != nil {
				return err
			}
			m := rdsoverdat.Msg{Data: buf}
			n, err := s.RecvMsg(&m, 0)
			if err != nil {
				return err
			}
			fmt.Printf("pong %d from %v len %d rtt %v\n", i, m.Addr, n, time.Since(t0).Round(time.Microsecond))
		}
	case *send != "":
		dst, err := netip.ParseAddrPort(*send)
		if err != nil {
			return err
		}
		var lens []int
		if *sizes != "" {
			for _, f := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					return err
				}
				lens = append(lens, n)
			}
		}
		for i := range *count {
			payload := []byte(fmt.Sprintf("%s %d", *msg, i))
			if len(lens) > 0 {
				payload = bytes.Repeat([]byte{byte('a' + i%26)}, lens[i%len(lens)])
			}
			if _, err := s.SendTo(payload, dst, 0); err != nil {
				return err
			}
			fmt.Printf("sent %d bytes to %v\n", len(payload), dst)
			m := rdsoverdat.Msg{Data: buf}
			n, err := s.RecvMsg(&m, 0)
			if err != nil {
				return fmt.Errorf("waiting for reply %d: %w", i, err)
			}
			fmt.Printf("reply from %v len %d: %q\n", m.Addr, n, abbrev(m.Data[:n]))
		}
	case *echo:
	echo:
		for {
			m := rdsoverdat.Msg{Data: buf}
			n, err := s.RecvMsg(&m, 0)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break echo
			}
			if err != nil {
				return err
			}
			fmt.Printf("recv from %v len %d: %q\n", m.Addr, n, abbrev(m.Data[:n]))
			reply := append([]byte("echo: "), m.Data[:min(n, 64)]...)
			if _, err := s.SendTo(reply, m.Addr, 0); err != nil {
				return err
			}
		}
	default:
		return errors.New("one of -echo, -send, -ping is required")
	}
	for _, n := range st.Nodes() {
		for _, c := range n.Conns() {
			tx, rx := c.Path(0).NextSeqs()
			fmt.Printf("conn %v -> %v %v npaths %d peer_gen %#x next_tx %d next_rx %d stats %+v\n",
				c.LocalAddr(), c.RemoteAddr(), c.Transport(), c.NPaths(), c.PeerGenNum(), tx, rx, c.Stats())
		}
	}
	return nil
}

func abbrev(b []byte) string {
	if len(b) > 48 {
		return string(b[:48]) + "..."
	}
	return string(b)
}
