// Package tools tests the command-line tools of cmd/ (the RDS tools
// rds-stress, rds-ping, rds-cat, rds-info in most depth) as a user or a
// script runs them: each binary is built once, started as a process,
// and judged by its output and exit code alone. Each test uses addresses
// of its own (testutil.LoopbackAddr), so that they can run beside the
// rest of `go test ./...` and other checkouts' tests.
package tools
