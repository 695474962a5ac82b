// Package testutil holds small helpers shared by the tests of several
// packages (it is imported only from _test.go files).
package testutil

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer that several goroutines may write while
// a test reads it: a command's stdout and stderr copiers, or a tool run
// in-process from its own goroutine.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
