package perf

import "testing"

// FuzzParseRequest feeds arbitrary connect private data to the server's
// parser: it must refuse or return a request within the limits, and a
// request it accepts must encode back to the same leading bytes.
func FuzzParseRequest(f *testing.F) {
	for _, r := range []request{
		{test: TestWrite, size: 65536, depth: 16},
		{test: TestSendRate, size: 64, depth: 512},
		{test: TestPingPong, size: 1, depth: 1},
	} {
		f.Add(r.append(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{protoVersion, 9, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRequest(b)
		if err != nil {
			return
		}
		if r.test < TestWrite || r.test > TestPingPong || r.size > MaxSize || r.depth == 0 || r.depth > maxDepth {
			t.Fatalf("accepted out-of-range request %+v", r)
		}
		enc := r.append(nil)
		for i := range enc {
			if i == 2 || i == 3 { // reserved bytes are ignored
				continue
			}
			if enc[i] != b[i] {
				t.Fatalf("request %+v re-encodes as %x, input %x", r, enc, b[:requestLen])
			}
		}
	})
}

// FuzzParseReply feeds arbitrary accept private data to the client's
// parser: short input is refused, anything else round-trips.
func FuzzParseReply(f *testing.F) {
	f.Add(reply{addr: 0x7f0000001000, rkey: 0x1234ab, size: 1 << 20}.append(nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseReply(b)
		if err != nil {
			if len(b) >= replyLen {
				t.Fatalf("refused %d bytes: %v", len(b), err)
			}
			return
		}
		if enc := r.append(nil); string(enc) != string(b[:replyLen]) {
			t.Fatalf("reply %+v re-encodes as %x, input %x", r, enc, b[:replyLen])
		}
	})
}
