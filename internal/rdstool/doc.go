// Package rdstool is what the RDS command-line tools (cmd/rds-stress,
// cmd/rds-ping, cmd/rds-cat, cmd/rds-info) share, so that they take the
// same flags, log the same way, fail the same way and expose their state
// the same way:
//
//   - Common: the flags every tool takes (--transport dat|tcp|kernel,
//     --transport-port, --ia, --log, --info-socket) and the Stack they describe
//     (NewStack), the one place that maps a transport name to an
//     rdsoverdat transport;
//   - Main: the exit-code contract (0 ok, 1 runtime failure, 2 usage),
//     one-line errors, -h, and the one Ctrl-C behaviour (ErrInterrupted:
//     an interrupt that left the tool's promise unkept);
//   - ParseSize, ParseInterval, ResolveAddr: the real tools' syntax for
//     sizes (K, M, G), intervals (msec, usec) and hosts (names too);
//   - Refusal: real flags that make no sense here, refused with a reason;
//   - Bind: "address in use" errors that name the ports and the way out;
//   - Logger: zerolog on stderr at the level of --log or GODAPL_LOG;
//   - ServeInfo and ReadInfo: a tool's Stack.Info as JSON on a unix
//     socket, which is how cmd/rds-info reaches the RDS state that lives
//     inside another process (the kernel keeps it in the kernel and
//     rds-info asks with getsockopt; here it is in the tool's process).
//
// cmd/godapl-devinfo uses Main and the exit-code contract too. It sits
// above rdsoverdat and below cmd/; nothing else imports it.
package rdstool
