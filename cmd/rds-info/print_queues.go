package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/godapl/godapl/rdsoverdat"
)

// printQueues prints -s, -t and -r: each message with the kernel's
// tables, counts per path (per socket for -r) with a tool's.
func (o *options) printQueues(w io.Writer, tw *tabwriter.Writer, info rdsoverdat.Info, kt *kernelTables) {
	for _, q := range []struct {
		want  bool
		name  string
		rows  func(*kernelTables) []msgRow
		count func(rdsoverdat.PathInfo) int
	}{
		{o.sendQ, "Send", func(k *kernelTables) []msgRow { return k.Send }, func(p rdsoverdat.PathInfo) int { return p.Queued }},
		{o.retransQ, "Retransmit", func(k *kernelTables) []msgRow { return k.Retrans },
			func(p rdsoverdat.PathInfo) int { return p.Unacked }},
		{o.recvQ, "Receive", func(k *kernelTables) []msgRow { return k.Recv }, nil},
	} {
		if !q.want {
			continue
		}
		fmt.Fprintf(w, "\n%s Message Queue:\n", q.name)
		switch {
		case kt != nil:
			fmt.Fprintln(tw, "LocalAddr\tLPort\tRemoteAddr\tRPort\tTos\tSeq\tBytes\t")
			for _, m := range q.rows(kt) {
				fmt.Fprintf(tw, "%v\t%d\t%v\t%d\t%d\t%d\t%d\t\n", m.Local.Addr(), m.Local.Port(), m.Remote.Addr(), m.Remote.Port(),
					m.Tos, m.Seq, m.Bytes)
			}
		case q.count != nil:
			fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tTos\tTransport\tPath\tMessages\t")
			for _, n := range info.Nodes {
				for _, c := range n.Conns {
					for _, p := range c.Paths {
						fmt.Fprintf(tw, "%v\t%v\t0\t%s\t%d\t%d\t\n", c.Local, c.Remote, c.Transport, p.Index, q.count(p))
					}
				}
			}
		default:
			fmt.Fprintln(tw, "LocalAddr\tLPort\tTransport\tBytes\t")
			for _, n := range info.Nodes {
				for _, s := range n.Sockets {
					fmt.Fprintf(tw, "%v\t%d\t%s\t%d\t\n", s.Bound.Addr(), s.Bound.Port(), dash(s.Transport), s.RecvQueued)
				}
			}
		}
		tw.Flush()
	}
}

// printTransports prints -T and -I: the kernel's rds_tcp sockets and
// rds_rdma connections, or a tool's connections over its tcp and dat
// transports.
func (o *options) printTransports(w io.Writer, tw *tabwriter.Writer, info rdsoverdat.Info, kt *kernelTables) {
	conns := func(transport string, f func(c rdsoverdat.ConnInfo, p rdsoverdat.PathInfo)) {
		for _, n := range info.Nodes {
			for _, c := range n.Conns {
				if c.Transport == transport {
					for _, p := range c.Paths {
						f(c, p)
					}
				}
			}
		}
	}
	up := func(p rdsoverdat.PathInfo) string {
		if p.Up {
			return "up"
		}
		return "down"
	}
	if o.tcp {
		fmt.Fprintln(w, "\nTCP Connections:")
		if kt != nil {
			fmt.Fprintln(tw, "LocalAddr\tLPort\tRemoteAddr\tRPort\tHdrRemain\tDataRemain\tSentNxt\tExpectUna\tSeenUna\t")
			for _, t := range kt.TCP {
				fmt.Fprintf(tw, "%v\t%d\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Local.Addr(), t.Local.Port(), t.Remote.Addr(),
					t.Remote.Port(), t.HdrRemain, t.DataRemain, t.SentNxt, t.ExpectUna, t.SeenUna)
			}
		} else {
			fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tPath\tState\tNextTX\tNextRX\tQueued\tUnacked\t")
			conns("tcp", func(c rdsoverdat.ConnInfo, p rdsoverdat.PathInfo) {
				fmt.Fprintf(tw, "%v\t%v\t%d\t%s\t%d\t%d\t%d\t%d\t\n", c.Local, c.Remote, p.Index, up(p), p.NextTX, p.NextRX,
					p.Queued, p.Unacked)
			})
		}
		tw.Flush()
	}
	if o.ib {
		fmt.Fprintln(w, "\nRDS IB Connections:")
		if kt != nil {
			fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tTos\tSL\tLocalDev\tRemoteDev\t")
			for _, c := range kt.IB {
				line := fmt.Sprintf("%v\t%v\t%d\t%d\t%v\t%v\t", c.Local, c.Remote, c.Tos, c.SL, c.LocalGID, c.RemoteGID)
				if o.verbose > 0 {
					line += fmt.Sprintf("  send_wr=%d, recv_wr=%d, send_sge=%d, rdma_mr_max=%d, rdma_mr_size=%d\t",
						c.SendWR, c.RecvWR, c.SendSGE, c.RDMAMRMax, c.RDMAMRSize)
				}
				fmt.Fprintln(tw, line)
			}
		} else {
			// The dat transport is this implementation's rds_rdma; it
			// has no service levels and names no devices by GID.
			fmt.Fprintln(tw, "LocalAddr\tRemoteAddr\tTos\tSL\tTransport\tState\t")
			conns("dat", func(c rdsoverdat.ConnInfo, p rdsoverdat.PathInfo) {
				line := fmt.Sprintf("%v\t%v\t0\t-\tdat\t%s\t", c.Local, c.Remote, up(p))
				if o.verbose > 0 {
					s := c.Stats
					line += fmt.Sprintf("  sent=%d, received=%d, acked=%d, retransmitted=%d, credit_stalls=%d\t",
						s.Sent, s.Received, s.Acked, s.Retransmitted, s.CreditStalls)
				}
				fmt.Fprintln(tw, line)
			})
		}
		tw.Flush()
	}
}
