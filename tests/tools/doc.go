// Package tools tests the RDS command-line tools (cmd/rds-stress,
// cmd/rds-ping, cmd/rds-cat, cmd/rds-info) as a user or a script runs
// them: each binary is built once, started as a process, and judged by
// its output and exit code alone. Each test uses addresses of its
// own (testutil.LoopbackAddr), so that they can run beside the rest of
// `go test ./...` and other checkouts' tests.
package tools
