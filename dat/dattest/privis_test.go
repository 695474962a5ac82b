package dattest

import "testing"

// TestPrivIs: the suite takes private data padded with zeros by an IB or
// RoCE CM as the data sent, and nothing else.
func TestPrivIs(t *testing.T) {
	for _, tc := range []struct {
		got  []byte
		want string
		ok   bool
	}{
		{[]byte("accepted"), "accepted", true},
		{append([]byte("accepted"), make([]byte, 188)...), "accepted", true}, // an IB CM REP: 196 bytes
		{append([]byte("no thanks"), make([]byte, 139)...), "no thanks", true},
		{nil, "", true},
		{make([]byte, 56), "", true},
		{[]byte("accepte"), "accepted", false},
		{[]byte("accepted\x00x"), "accepted", false},
		{[]byte("accepted!"), "accepted", false},
		{[]byte("Accepted"), "accepted", false},
	} {
		if got := privIs(tc.got, tc.want); got != tc.ok {
			t.Errorf("privIs(%q, %q) = %v, want %v", tc.got, tc.want, got, tc.ok)
		}
	}
}
