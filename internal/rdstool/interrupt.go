package rdstool

import (
	"errors"
	"fmt"
)

// The one Ctrl-C behaviour of every tool: SIGINT or SIGTERM ends Run's
// context; the tool stops starting work, lets what is in flight finish
// (within its timeout), prints what it measured so far marked
// "interrupted" (JSON: "interrupted": true), and exits 0 if its promise
// was kept so far and 1 if not (ErrInterrupted).

// ErrInterrupted is what a tool returns when an interrupt cut short a run
// whose promise it then could not keep (a measurement left unfinished,
// datagrams left unacknowledged).
var ErrInterrupted = errors.New("interrupted")

// Interruptedf wraps ErrInterrupted with what was left undone.
func Interruptedf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInterrupted, fmt.Sprintf(format, a...))
}
