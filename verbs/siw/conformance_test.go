package siw_test

import (
	"os"
	"testing"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// openPair opens two independent siw devices that reach each other over
// loopback TCP.
func openPair(t testing.TB, opts siw.Options) (a, b verbs.Device) {
	t.Helper()
	p := siw.New(opts)
	a, err := p.Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	b, err = p.Open(siw.DeviceName)
	if err != nil {
		a.Close()
		t.Fatal(err)
	}
	return a, b
}

// testOptions are the options tests start from: silent, unless
// GODAPL_SIW_DEBUG is set, which logs connection events to stderr.
func testOptions() siw.Options {
	var o siw.Options
	if os.Getenv("GODAPL_SIW_DEBUG") != "" {
		o.Logger = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	}
	return o
}

// eachFraming runs f as subtests over the framings whose boundaries a
// stream test must survive: the default, with CRC, and FPDUs small
// enough that one read holds many.
func eachFraming(t *testing.T, f func(*testing.T, siw.Options)) {
	for _, tc := range []struct {
		name string
		opts func(*siw.Options)
	}{
		{"default", func(*siw.Options) {}},
		{"crc", func(o *siw.Options) { o.CRC = true }},
		{"small-fpdus", func(o *siw.Options) { o.MaxULPDU = 1500 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			tc.opts(&o)
			f(t, o)
		})
	}
}

// TestConformance runs the provider-neutral suite against two siw devices
// on 127.0.0.1, with the default options (peer-to-peer mode, no CRC).
func TestConformance(t *testing.T) {
	verbstest.Run(t, verbstest.Harness{
		NewPair: func(t *testing.T) (verbs.Device, verbs.Device, string) {
			a, b := openPair(t, testOptions())
			return a, b, "127.0.0.1:0"
		},
	})
}

// TestConformanceCRCNoP2P runs the suite again with CRC on every FPDU and
// the connection setup of a kernel siw initiator (no peer-to-peer mode).
// Without an RTR the responder would hold its FPDUs until the initiator's
// first one, and several cases have the passive side send first, so the
// responder sends at once (SendImmediately, meant for Go peers).
func TestConformanceCRCNoP2P(t *testing.T) {
	verbstest.Run(t, verbstest.Harness{
		NewPair: func(t *testing.T) (verbs.Device, verbs.Device, string) {
			o := testOptions()
			o.CRC, o.NoPeerToPeer, o.SendImmediately = true, true, true
			a, b := openPair(t, o)
			return a, b, "127.0.0.1:0"
		},
	})
}
