package rdstool

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// The info socket. RDS state (sockets, connections, congestion maps,
// counters) lives in the process that runs a Stack, so a tool that starts
// one serves Stack.Info on a unix socket and cmd/rds-info reads it: the
// client connects, the server writes one JSON Document and closes. By
// default each tool serves on DefaultInfoDir/NAME-PID.sock, and rds-info
// with no socket given reads every socket in that directory, as the
// kernel's rds-info shows every socket of the namespace. Unix sockets
// with a path do not care about network namespaces: rds-info in any
// namespace of the host sees every tool, and each document says which
// addresses its nodes have.

// Info socket settings.
const (
	InfoAuto       = "auto"        // --info-socket: DefaultInfoDir/NAME-PID.sock
	InfoNone       = "none"        // --info-socket: serve nothing
	DefaultInfoDir = "/run/godapl" // where auto sockets go
	InfoDirEnv     = "GODAPL_RUN_DIR"
)

// InfoDir returns the directory of auto info sockets: $GODAPL_RUN_DIR,
// else DefaultInfoDir.
func InfoDir() string {
	if d := os.Getenv(InfoDirEnv); d != "" {
		return d
	}
	return DefaultInfoDir
}

// Document is what an info socket serves.
type Document struct {
	Tool    string    `json:"tool"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Stacks holds one Info per Stack of the tool (rds-stress with no
	// arguments runs two, as if on two hosts).
	Stacks []rdsoverdat.Info `json:"stacks"`
}

// InfoServer serves a Stack's state on a unix socket until Close.
type InfoServer struct {
	ln      *net.UnixListener
	path    string
	doc     Document
	stacks  []*rdsoverdat.Stack
	wg      sync.WaitGroup
	closeMu sync.Once
}

// ServeInfo starts serving the stacks' state as --info-socket says. In auto
// mode a failure (say, /run not writable) only logs at debug level and
// returns a nil server, whose Close does nothing: rds-info is a
// convenience; an explicit path that fails is an error.
func (c *Common) ServeInfo(stacks ...*rdsoverdat.Stack) (*InfoServer, error) {
	path := c.InfoSocket
	if c.Daemon != "" {
		return nil, nil // the daemon serves the host's state
	}
	switch path {
	case InfoNone, "":
		return nil, nil
	case InfoAuto:
		dir := InfoDir()
		path = filepath.Join(dir, fmt.Sprintf("%s-%d.sock", c.name, os.Getpid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			c.Logger.Debug().Err(err).Msg("no info socket")
			return nil, nil
		}
	}
	srv, err := listenInfo(path, c.name, stacks)
	if err != nil {
		if c.InfoSocket == InfoAuto {
			c.Logger.Debug().Err(err).Msg("no info socket")
			return nil, nil
		}
		return nil, fmt.Errorf("--info-socket: %w", err)
	}
	c.Logger.Debug().Str("path", path).Msg("serving rds-info")
	return srv, nil
}

func listenInfo(path, tool string, stacks []*rdsoverdat.Stack) (*InfoServer, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if errors.Is(err, syscall.EADDRINUSE) {
		// A socket file left by a process that died: take it over, but
		// never one that still answers.
		if c, derr := net.DialTimeout("unix", path, time.Second); derr == nil {
			c.Close()
			return nil, fmt.Errorf("%s is served by another running tool", path)
		}
		os.Remove(path)
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	}
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	s := &InfoServer{ln: ln, path: path, stacks: stacks,
		doc: Document{Tool: tool, PID: os.Getpid(), Started: time.Now().UTC().Truncate(time.Second)}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Path returns the socket's path ("" for a nil server).
func (s *InfoServer) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// serve answers each connection with one Document, one at a time (the
// snapshot is cheap, and a slow reader is cut off by the write deadline).
func (s *InfoServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		doc := s.doc
		for _, st := range s.stacks {
			doc.Stacks = append(doc.Stacks, st.Info())
		}
		c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		json.NewEncoder(c).Encode(doc)
		c.Close()
	}
}

// Close stops serving and removes the socket file. It is safe on nil.
func (s *InfoServer) Close() {
	if s == nil {
		return
	}
	s.closeMu.Do(func() {
		s.ln.Close()
		s.wg.Wait()
	})
}

// ReadInfo reads the Document served at path, giving up after timeout.
func ReadInfo(path string, timeout time.Duration) (Document, error) {
	var doc Document
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return doc, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if err := json.NewDecoder(c).Decode(&doc); err != nil {
		return doc, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

// InfoSockets lists the *.sock files of dir, sorted.
func InfoSockets(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ps []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sock") {
			ps = append(ps, filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(ps)
	return ps, nil
}
