package faults

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/godapl/godapl/tests/internal/netns"
)

// roleEnv names the child role a re-executed test binary plays.
const roleEnv = "GODAPL_FAULTS_ROLE"

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		fn := roles[role]
		if fn == nil {
			fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
			os.Exit(2)
		}
		if err := fn(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// The scenarios spend their time waiting on child processes and
	// links, not computing: run four at once unless -test.parallel says
	// otherwise.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "4")
	}
	if netns.Available() == nil {
		netns.Sweep()
	}
	os.Exit(m.Run())
}
