// Package tools tests the RDS command-line tools (cmd/rds-stress,
// cmd/rds-ping, cmd/rds-cat, cmd/rds-info) as a user or a script runs
// them: each binary is built once, started as a process, and judged by
// its output and exit code alone. The tests use addresses in
// 127.91.0.0/16, which no other test of the repository uses, so that they
// can run beside the rest of `go test ./...`.
package tools
