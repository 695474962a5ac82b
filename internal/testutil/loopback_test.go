package testutil

import (
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Two processes never hand out addresses of one block: this one holds
// its block while children of it (this test binary again, which only
// prints its first address) claim theirs, each starting its search at
// this one's block.
func TestLoopbackAddrBlocksPerProcess(t *testing.T) {
	if start := os.Getenv("TESTUTIL_LOOPBACK_START"); start != "" {
		blockStart = func() int { n, _ := strconv.Atoi(start); return n }
		os.Stdout.WriteString(LoopbackAddr().String() + "\n")
		os.Exit(0)
	}
	mine := LoopbackAddr()
	seen := map[netip.Addr]bool{mine: true}
	for range 3 {
		a := LoopbackAddr()
		if seen[a] {
			t.Fatalf("%v handed out twice", a)
		}
		seen[a] = true
	}
	for range 4 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLoopbackAddrBlocksPerProcess$")
		cmd.Env = append(os.Environ(), "TESTUTIL_LOOPBACK_START="+strconv.Itoa(int(mine.As4()[1])-firstBlock))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		theirs, err := netip.ParseAddr(strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("child said %q", out)
		}
		if theirs.As4()[1] == mine.As4()[1] {
			t.Fatalf("this process hands out %v and a child %v: one block", mine, theirs)
		}
	}
}
