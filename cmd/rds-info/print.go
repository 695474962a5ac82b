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
	name   string
	doc    rdstool.Document
	kernel *kernelTables // the kernel's own tables (--transport kernel)
}

func (o *options) print(w io.Writer, srcs []source) error {
	if o.json {
		type out struct {
			Source string `json:"source"`
			rdstool.Document
			Kernel *kernelTables `json:"kernel_tables,omitempty"`
		}
		all := []out{} // no node running: an empty list, not null
		for _, s := range srcs {
			all = append(all, out{s.name, s.doc, s.kernel})
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	if len(srcs) == 0 {
		o.printStack(w, rdsoverdat.Info{}, nil)
		return nil
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
			o.printStack(w, info, s.kernel)
		}
	}
	return nil
}

// printStack prints the tables of one stack, each only if asked for: the
// real tool's columns first, this implementation's extras after them.
func (o *options) printStack(w io.Writer, info rdsoverdat.Info, kt *kernelTables) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	unknown := func(v int) string { // the kernel does not report queued bytes
		if info.Kernel {
			return "-"
		}
		return fmt.Sprint(v)
	}
	if o.sockets {
		// Sockets here are never connect()ed, and have no inode.
		fmt.Fprintln(w, "\nRDS Sockets:")
		fmt.Fprintln(tw, "BoundAddr\tBPort\tConnAddr\tCPort\tSndBuf\tRcvBuf\tInode\tTransport\tSndQueued\tRcvQueued\tCongested\t")
		for _, n := range info.Nodes {
			for _, s := range n.Sockets {
				fmt.Fprintf(tw, "%v\t%d\t0.0.0.0\t0\t%d\t%d\t-\t%s\t%s\t%s\t%s\t\n", s.Bound.Addr(), s.Bound.Port(),
					s.SendBuffer, s.RecvBuffer, dash(s.Transport), unknown(s.SendQueued), unknown(s.RecvQueued), yesNo(s.Congested))
			}
		}
		tw.Flush()
	}
	if o.conns {
		fmt.Fprintln(w, "\nRDS Connections:")
		fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tTos\tNextTX\tNextRX\tFlgs\tTransport\tPath\tQueued\tUnacked\tNPaths\tPeerGen\t")
		for _, n := range info.Nodes {
			for _, c := range n.Conns {
				for _, p := range c.Paths {
					flags := "----"
					if p.Up {
						flags = "--C-"
					}
					fmt.Fprintf(tw, "%v\t%v\t0\t%d\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%#x\t\n", c.Local, c.Remote,
						p.NextTX, p.NextRX, flags, c.Transport, p.Index, unknown(p.Queued), unknown(p.Unacked), c.NPaths, c.PeerGenNum)
				}
			}
		}
		tw.Flush()
	}
	o.printQueues(w, tw, info, kt)
	o.printTransports(w, tw, info, kt)
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
		printed := false
		defer func() {
			if !printed {
				fmt.Fprintln(w, "\nCounters:")
				fmt.Fprintln(tw, "CounterName\tValue\t")
				tw.Flush()
			}
		}()
		for _, n := range info.Nodes {
			if len(n.Counters) == 0 {
				continue
			}
			printed = true
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
