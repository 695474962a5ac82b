package wire

// Ping conventions (net/rds/recv.c, send.c; rds-ping). A message to
// destination port 0 from a non-zero source port is a ping: the receiving
// node answers with a pong, a sequenced 0-byte message from port 0 to the
// ping's source port, and delivers nothing. Pings from port 0 are ignored
// so that pongs never loop.
//
// The multipath handshake reuses this: a probe ping comes from ProbePort
// (1) and carries NPATHS (and, from mainline senders, GEN_NUM); its pong
// goes from port 0 to port 1 with the answering node's own NPATHS.
const (
	// PingPort is the destination port of pings and the source of pongs.
	PingPort Port = 0
	// ProbePort is RDS_FLAG_PROBE_PORT: the source port of handshake
	// probes. Applications may not bind it (EINVAL), nor port 0.
	ProbePort Port = 1
)

// IsPing reports whether a message from sport to dport is a ping that
// wants a pong.
func IsPing(sport, dport Port) bool { return dport == PingPort && sport != PingPort }

// IsProbe is RDS_HS_PROBE: the handshake probe ping (1 -> 0) or its
// pong (0 -> 1).
func IsProbe(sport, dport Port) bool {
	return (sport == ProbePort && dport == PingPort) || (sport == PingPort && dport == ProbePort)
}

// IsHandshakePong reports a pong to a handshake probe (0 -> 1).
func IsHandshakePong(sport, dport Port) bool { return sport == PingPort && dport == ProbePort }

// PongFields returns the header of the pong answering a ping from sport:
// a 0-byte message from port 0. The caller fills the sequence number and,
// for a probe, the NPATHS/GEN_NUM extensions.
func PongFields(seq Seq, pingSport Port) Fields {
	return Fields{Sequence: seq, Sport: PingPort, Dport: pingSport}
}
