// Package rdsdproto is the control protocol between rdsd, the daemon that
// owns a host's RDS nodes, and the processes whose sockets it runs: the
// layer under rdsoverdat's daemon backend (daemon_client*.go) and its
// server (daemon_server*.go), above a unix SOCK_SEQPACKET connection.
//
// One connection carries one RDS socket, so the connection is the
// socket's identity: a client can name no socket but its own, and the
// daemon closes the socket when the connection ends (the process exited
// or was killed). Every request carries an ID that its reply echoes, so
// that calls of several goroutines on one socket (a blocked RecvMsg while
// another goroutine sends) share the connection.
//
// A record is one SOCK_SEQPACKET datagram: a fixed header (Record's
// accessors) and a body. A body longer than MaxBody continues in the
// following records of the same ID, each with FlagMore set except the
// last; one writer sends a record sequence without interleaving. All
// integers are little-endian: both ends run on one host.
//
// Parse checks the header of every record read; Decode* check the
// bodies. A record that fails them ends the connection: the peer that
// sent it is broken or hostile, and nothing it says can be trusted.
package rdsdproto
