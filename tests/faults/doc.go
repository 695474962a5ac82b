// Package faults is the reliability suite: RDS and DAT under broken
// connections, impaired links, load and hostile peers, each scenario run
// across network namespaces (../internal/netns) with real processes where
// the fault is a process's death, and with counts printed at the end of
// every scenario (sent, received, retransmitted, canceled, duplicates,
// lost, duration) that the test then asserts on.
//
// It sits on top of every layer and imports them only through their public
// APIs. The package holds tests only: the node processes it starts are the
// test binary itself re-executed with GODAPL_FAULTS_ROLE set (roles_test.go),
// so that `go test` builds everything a scenario runs.
//
// `go test ./tests/faults` runs the short version (well under a minute on
// two cores under -race); `make faults` runs the long one (FAULTS_LONG=1,
// and SOAK=5m for the soak's duration). Scenarios that need namespaces skip
// when the process is not root. docs/RELIABILITY.md records the figures.
package faults
