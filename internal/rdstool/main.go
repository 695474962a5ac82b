package rdstool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/godapl/godapl/internal/version"
)

// Exit codes every tool returns, so that scripts can tell a typo from a
// failed run.
const (
	ExitOK      = 0 // the run did what was asked (for rds-ping: replies came back)
	ExitFailure = 1 // runtime failure: bind failed, peer unreachable, no reply
	ExitUsage   = 2 // bad command line: unknown flag, bad address, bad value
)

// UsageError marks an error in the command line (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with a formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{fmt.Errorf(format, a...)}
}

// Tool describes one command for Run.
type Tool struct {
	// Name is the command name that prefixes every error line.
	Name string
	// Synopsis is the usage line(s) and a sentence on what the tool
	// does, printed above the flags by -h.
	Synopsis string
	// Flags is the tool's flag set; Run parses it.
	Flags *flag.FlagSet
	// NoLog says the tool logs nothing, so -h leaves out the logging line.
	NoLog bool
	// Run does the work once the flags are parsed. The context ends on
	// SIGINT or SIGTERM, which is a normal end for tools that run until
	// stopped. It returns nil, a UsageError, or a runtime error.
	Run func(ctx context.Context, args []string) error
}

// NewFlagSet returns a flag set that reports errors to Run instead of
// printing them itself.
func NewFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// Main runs t with the process's arguments and exits with Run's code.
func Main(t Tool) {
	os.Exit(Run(t, os.Args[1:], os.Stdout, os.Stderr))
}

// Run parses args and runs t, printing -h to stdout and errors to stderr
// as one line "name: message", and returns the exit code.
func Run(t Tool, args []string, stdout, stderr io.Writer) int {
	if version.Requested(args) {
		version.Print(stdout, t.Name)
		return ExitOK
	}
	t.Flags.Usage = func() {} // flag calls it on every error; -h is handled here
	pos, err := parseInterspersed(t.Flags, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			PrintUsage(stdout, t)
			return ExitOK
		}
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", t.Name, err, t.Name)
		return ExitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = t.Run(ctx, pos)
	if err == nil {
		return ExitOK
	}
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "%s: %s (see %s -h)\n", t.Name, msg, t.Name)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s: %s\n", t.Name, msg)
	return ExitFailure
}

// parseInterspersed parses flags before, between and after positional
// arguments ("rds-cat DEST:PORT --size 10"), which the flag package
// alone stops at; after "--" everything is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// PrintUsage prints the synopsis, every flag with its meaning and
// default, and the exit codes.
func PrintUsage(w io.Writer, t Tool) {
	fmt.Fprintf(w, "%s\n\nFlags (one or two dashes):\n", strings.TrimSpace(t.Synopsis))
	t.Flags.SetOutput(w)
	t.Flags.PrintDefaults()
	t.Flags.SetOutput(io.Discard)
	fmt.Fprintf(w, "\nExit status: 0 success, 1 runtime failure, 2 bad command line.\n")
	if !t.NoLog {
		fmt.Fprintf(w, "Logging: --log or GODAPL_LOG (trace, debug, info, warn, error, disabled).\n")
	}
	fmt.Fprintf(w, "--version prints the module version and commit the tool was built from.\n")
}
