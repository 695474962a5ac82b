// Command godapl-devinfo lists what a godapl program can open, in the
// spirit of rdma-core's ibv_devinfo next to /etc/dat.conf: the verbs
// providers built into this binary, their devices (transport, address,
// limits) and the DAT IA names of the registry (dat/providers, or the
// file $GODAPL_DAT_CONF names), with the address each IA opens on.
//
//	godapl-devinfo [-v] [-d DEVICE] [-json]   providers, devices, IA names
//	godapl-devinfo -l                         device names only
//
// It enumerates whatever dat/providers lists, so a provider added there
// (a build-tagged one included) shows up without change here.
package main

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/godapl/godapl/internal/rdstool"
)

const synopsis = `usage: godapl-devinfo [-v] [-d DEVICE] [-json]
       godapl-devinfo -l

Lists the verbs providers built into godapl, their devices with transport,
address and limits (-v: every limit and counter), and the DAT IA names of the
registry with the address each opens on: what -D, --provider and ia.Open take.`

func main() {
	rdstool.Main(tool(os.Stdout))
}

type options struct {
	verbose bool
	device  string
	list    bool
	json    bool
}

func tool(stdout io.Writer) rdstool.Tool {
	o := &options{}
	fs := rdstool.NewFlagSet("godapl-devinfo")
	fs.BoolVar(&o.verbose, "v", false, "verbose: every device limit and counter")
	fs.StringVar(&o.device, "d", "", "show this device only (its IA names too)")
	fs.BoolVar(&o.list, "l", false, "print the device names only, one per line")
	fs.BoolVar(&o.json, "json", false, "print everything as JSON")
	return rdstool.Tool{Name: "godapl-devinfo", Synopsis: synopsis, Flags: fs, NoLog: true,
		Run: func(ctx context.Context, args []string) error {
			if len(args) != 0 {
				return rdstool.Usagef("unexpected argument %q", args[0])
			}
			if o.list && (o.json || o.verbose || o.device != "") {
				return rdstool.Usagef("-l prints names only: drop -v, -d and -json")
			}
			inv, err := collect()
			if err != nil {
				return err
			}
			if o.device != "" {
				if inv, err = inv.only(o.device); err != nil {
					return err
				}
			}
			switch {
			case o.list:
				return inv.printList(stdout)
			case o.json:
				return inv.writeJSON(stdout)
			}
			inv.print(stdout, o.verbose)
			if len(inv.Devices) == 0 && len(inv.IAs) == 0 {
				return errors.New("no device and no IA found")
			}
			return nil
		}}
}
