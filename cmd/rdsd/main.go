// Command rdsd is the host's RDS daemon: it owns the RDS nodes of the
// addresses it is given, their transport (tcp or dat), connections,
// congestion maps and counters, as the kernel's rds module does, and
// runs the sockets of every process that uses it (rdsoverdat
// Config.Daemon, or the tools' --rdsd and $RDSD_SOCKET). Many processes
// then bind ports of one address and share its one connection per peer
// node.
//
//	rdsd -a ADDR [-a ADDR...] [--transport tcp|dat] [--ia NAME] [--socket PATH] [--group NAME] [--mode 0660]
//
// Clients connect to a unix SOCK_SEQPACKET socket (--socket, default
// /run/rdsd.sock), created with --mode (default 0660) and owned by
// --group: who may connect may use RDS. SIGTERM or SIGINT stops it:
// every client socket is closed as close(2) closes it (messages not
// yet acknowledged are canceled), then the nodes. It serves its state to
// rds-info as every RDS tool does (--info-socket). It reloads nothing:
// a change of addresses or transport is a restart, and SIGHUP only logs
// that. docs/RDSD.md has the
// design; rdsd.service is a systemd unit for it.
package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

const synopsis = `usage: rdsd -a ADDR [-a ADDR...] [flags]

Runs the host's RDS nodes for the given local addresses and serves their
sockets to every process on the host over a unix socket (--socket).`

func main() {
	rdstool.Main(tool(os.Stderr))
}

// addrList collects repeated -a flags.
type addrList []netip.Addr

func (l addrList) String() string { return fmt.Sprint([]netip.Addr(l)) }

func (l *addrList) Set(s string) error {
	for _, f := range strings.Split(s, ",") {
		a, err := rdstool.ParseAddr("-a", strings.TrimSpace(f))
		if err != nil {
			return err
		}
		*l = append(*l, a)
	}
	return nil
}

func tool(stderr io.Writer) rdstool.Tool {
	var c rdstool.Common
	var addrs addrList
	fs := rdstool.NewFlagSet("rdsd")
	c.Register(fs, "rdsd")
	fs.Var(&addrs, "a", "local IPv4 address whose RDS node the daemon runs (repeatable, or comma-separated)")
	sock := fs.String("socket", rdsoverdat.DefaultDaemonSocket, "unix socket clients connect to")
	group := fs.String("group", "", "group owning --socket, whose members may use RDS (default: rdsd's own group)")
	mode := fs.String("mode", "0660", "permissions of --socket (octal)")
	return rdstool.Tool{Name: "rdsd", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) != 0 {
				return rdstool.Usagef("unexpected argument %q", args[0])
			}
			if len(addrs) == 0 {
				return rdstool.Usagef("want at least one -a ADDR")
			}
			if c.Transport == rdstool.TransportKernel {
				return rdstool.Usagef("--transport kernel: the kernel runs its own RDS; rdsd runs tcp or dat")
			}
			perm, err := strconv.ParseUint(*mode, 8, 32)
			if err != nil || perm > 0o777 {
				return rdstool.Usagef("--mode %q: want octal permissions such as 0660", *mode)
			}
			gid := -1
			if *group != "" {
				g, err := user.LookupGroup(*group)
				if err != nil {
					return fmt.Errorf("--group: %w", err)
				}
				gid, _ = strconv.Atoi(g.Gid)
			}
			if err := c.Setup(stderr); err != nil {
				return err
			}
			return run(ctx, &c, addrs, *sock, os.FileMode(perm), gid)
		}}
}

// run serves until ctx ends (SIGTERM, SIGINT).
func run(ctx context.Context, c *rdstool.Common, addrs []netip.Addr, path string, mode os.FileMode, gid int) error {
	log := c.Logger
	// The daemon is the host's RDS: it is never a client of another.
	os.Unsetenv(rdsoverdat.DaemonEnv)
	c.Daemon = ""
	st, err := c.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := rdsoverdat.NewDaemon(st, rdsoverdat.DaemonConfig{Addrs: addrs, Logger: &log})
	if err != nil {
		return err
	}
	ln, err := rdsoverdat.ListenDaemon(path, mode, gid)
	if err != nil {
		return fmt.Errorf("--socket %s: %w", path, err)
	}
	info, err := c.ServeInfo(st)
	if err != nil {
		ln.Close()
		return err
	}
	defer info.Close()
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	log.Info().Str("socket", path).Str("transport", c.Transport).Stringer("addrs", addrList(addrs)).
		Msg("rdsd serving")
	// SIGHUP would end the process by default; rdsd has nothing to
	// reload, and says so instead of doing anything silently.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-hup:
			log.Warn().Msg("SIGHUP: rdsd reloads nothing; restart it to change its addresses or transport")
			continue
		case <-ctx.Done():
			log.Info().Int("clients", d.Clients()).Msg("stopping: closing every client socket")
			d.Close()
			<-served
			return nil
		case err := <-served:
			d.Close()
			return fmt.Errorf("serving %s: %w", path, err)
		}
	}
}
