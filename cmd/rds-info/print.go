package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

// source is one tool's (or the kernel's) state.
type source struct {
	name string
	doc  rdstool.Document
}

func (o *options) print(w io.Writer, srcs []source) error {
	if o.json {
		type out struct {
			Source string `json:"source"`
			rdstool.Document
		}
		var all []out
		for _, s := range srcs {
			all = append(all, out{s.name, s.doc})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	for i, s := range srcs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if s.doc.PID != 0 {
			fmt.Fprintf(w, "== %s (pid %d, since %s) on %s\n", s.doc.Tool, s.doc.PID, s.doc.Started.Format("15:04:05"), s.name)
		} else {
			fmt.Fprintf(w, "== %s\n", s.name)
		}
		for _, info := range s.doc.Stacks {
			o.printStack(w, info)
		}
	}
	return nil
}

// printStack prints the tables of one stack, each only if asked for.
func (o *options) printStack(w io.Writer, info rdsoverdat.Info) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unknown := func(v int) string { // the kernel does not report queued bytes
		if info.Kernel {
			return "-"
		}
		return fmt.Sprint(v)
	}
	if o.sockets {
		fmt.Fprintln(w, "\nRDS Sockets:")
		fmt.Fprintln(tw, "BoundAddr\tBPort\tTransport\tSndBuf\tRcvBuf\tSndQueued\tRcvQueued\tCongested\t")
		for _, n := range info.Nodes {
			for _, s := range n.Sockets {
				fmt.Fprintf(tw, "%v\t%d\t%s\t%d\t%d\t%s\t%s\t%s\t\n", s.Bound.Addr(), s.Bound.Port(), dash(s.Transport),
					s.SendBuffer, s.RecvBuffer, unknown(s.SendQueued), unknown(s.RecvQueued), yesNo(s.Congested))
			}
		}
		tw.Flush()
	}
	if o.conns {
		fmt.Fprintln(w, "\nRDS Connections:")
		fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tTransport\tPath\tNextTX\tNextRX\tQueued\tUnacked\tFlgs\tNPaths\tPeerGen\t")
		for _, n := range info.Nodes {
			for _, c := range n.Conns {
				for _, p := range c.Paths {
					flags := "--"
					if p.Up {
						flags = "-C"
					}
					fmt.Fprintf(tw, "%v\t%v\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t%#x\t\n", c.Local, c.Remote, c.Transport, p.Index,
						p.NextTX, p.NextRX, unknown(p.Queued), unknown(p.Unacked), flags, c.NPaths, c.PeerGenNum)
				}
			}
		}
		tw.Flush()
	}
	if o.cong && !info.Kernel {
		fmt.Fprintln(w, "\nRDS Congestion (congested ports):")
		fmt.Fprintln(tw, "Node\tPeer\tTransport\tPorts\t")
		for _, n := range info.Nodes {
			fmt.Fprintf(tw, "%v\t(local)\t-\t%s\t\n", n.Addr, ports(n.Congested))
			for _, c := range n.Conns {
				fmt.Fprintf(tw, "%v\t%v\t%s\t%s\t\n", n.Addr, c.Remote, c.Transport, ports(c.RemoteCongested))
			}
		}
		tw.Flush()
	}
	if o.counters {
		for _, n := range info.Nodes {
			if len(n.Counters) == 0 {
				continue
			}
			if n.Addr.IsValid() {
				fmt.Fprintf(w, "\nCounters (%v):\n", n.Addr)
			} else {
				fmt.Fprintln(w, "\nCounters:")
			}
			fmt.Fprintln(tw, "CounterName\tValue\t")
			for _, c := range n.Counters {
				fmt.Fprintf(tw, "%s\t%d\t\n", c.Name, c.Value)
			}
			tw.Flush()
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ports lists ports, or "none".
func ports(ps []uint16) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}
