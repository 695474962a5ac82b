// Package verbstest is the conformance suite every verbs provider must pass,
// and the small toolkit of helpers the suite is built from.
//
// It sits beside verbs/ in the layering: it imports only the
// provider-neutral API, never a provider, and each provider's own tests
// import it. A provider hands Run a Harness that opens two devices that can
// reach each other; Run then exercises the whole contract of package verbs —
// object lifetimes, the QP state machine, queue limits, the connection
// manager, data placement, SRQs, memory windows, and the error behaviour of
// the Linux siw driver that docs/WIRE.md (I4) describes — with
// assertions that fail on a provider that gets it wrong.
//
// A provider's test runs it like this:
//
//	func TestConformance(t *testing.T) {
//		verbstest.Run(t, verbstest.Harness{
//			NewPair: func(t *testing.T) (verbs.Device, verbs.Device, string) {
//				p := mem.New()
//				a, _ := p.Open(mem.DeviceName)
//				b, _ := p.Open(mem.DeviceName)
//				return a, b, "10.0.0.1:0"
//			},
//		})
//	}
//
// Where the API leaves a choice open, the suite takes the behaviour of
// libibverbs and the Linux siw driver; the comments of the sub-tests say
// so where it matters.
//
// The helpers (ConnectPair, PollOne, NewBuf, CheckLeaks, WaitAsyncEvent, ...)
// are exported so that providers and the layers above can write their own
// tests in the same terms. The files are ordinary Go files, not _test.go
// files, because other packages import them.
package verbstest
