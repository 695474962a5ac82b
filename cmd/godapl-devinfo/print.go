package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/godapl/godapl/dat"
)

// confFile returns the registry file in force, if any.
func confFile() (string, bool) {
	c := os.Getenv(dat.ConfEnv)
	return c, c != ""
}

func (inv *inventory) printList(w io.Writer) error {
	for _, d := range inv.Devices {
		fmt.Fprintln(w, d.Name)
	}
	return nil
}

func (inv *inventory) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(inv)
}

// print writes ibv_devinfo-style blocks per device, then the IA names
// as a registry file would list them.
func (inv *inventory) print(w io.Writer, verbose bool) {
	var ps []string
	for _, p := range inv.Providers {
		ps = append(ps, fmt.Sprintf("%s (%d devices)", p.Name, len(p.Devices)))
	}
	fmt.Fprintf(w, "providers: %s\n", strings.Join(ps, ", "))
	for _, d := range inv.Devices {
		a := d.Attr
		addr := strings.Join(d.Addresses, ", ")
		if addr == "" {
			addr = "-"
		}
		fmt.Fprintf(w, "\nhca_id:\t%s\n", d.Name)
		tw := tabwriter.NewWriter(w, 0, 8, 1, '\t', 0)
		row := func(k string, v any) { fmt.Fprintf(tw, "\t%s:\t%v\n", k, v) }
		row("provider", d.Provider)
		row("transport", d.Transport)
		row("address", addr)
		row("fw_ver", dash(d.FWVersion))
		row("vendor_id", fmt.Sprintf("%#x", d.VendorID))
		row("max_mr_size", fmt.Sprintf("%#x", a.MaxMRSize))
		row("max_qp", a.MaxQP)
		row("max_qp_wr", a.MaxQPWR)
		row("max_sge", a.MaxSGE)
		row("max_cq", a.MaxCQ)
		row("max_cqe", a.MaxCQE)
		row("max_mr", a.MaxMR)
		if verbose {
			row("max_sge_rd", a.MaxSGERead)
			row("max_mw", a.MaxMW)
			row("max_pd", a.MaxPD)
			row("max_srq", a.MaxSRQ)
			row("max_srq_wr", a.MaxSRQWR)
			row("max_srq_sge", a.MaxSRQSGE)
			row("max_qp_rd_atom", a.MaxIRD)
			row("max_qp_init_rd_atom", a.MaxORD)
			row("max_inline_data", a.MaxInline)
			row("max_private_data", a.MaxPrivData)
			s := d.Stats
			row("qps_created", s.QPsCreated)
			row("conns_established", s.ConnsEstablished)
			row("bytes_sent", s.BytesSent)
			row("bytes_received", s.BytesReceived)
		}
		tw.Flush()
	}
	src := "the default registry"
	if inv.Registry != "default" {
		src = inv.Registry
	}
	fmt.Fprintf(w, "\nDAT IA names (%s; a file in $%s replaces it):\n", src, dat.ConfEnv)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "# ia-name\tprovider\tdevice\tinterface\taddress")
	for _, ia := range inv.IAs {
		addr := ia.Address
		if addr == "" {
			addr = "-\t# " + ia.Problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ia.Name, ia.Provider, ia.Device, dash(ia.Interface), addr)
	}
	tw.Flush()
	for _, p := range inv.Problems {
		fmt.Fprintf(w, "# note: %s\n", p)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
