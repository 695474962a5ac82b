package rdsdproto

// Op is a request's operation. The fields each uses (request → reply):
type Op uint8

const (
	_ Op = iota
	// OpBind: AddrPort → AddrPort (the bound address).
	OpBind
	// OpClose: → nothing. The socket closes; the connection stays until
	// the client closes it.
	OpClose
	// OpDeadline: A (0 read, 1 write), B (Unix nanoseconds, 0 none) → nothing.
	OpDeadline
	// OpSend: AddrPort (destination), A (MsgFlags), N (payload bytes),
	// C (bytes of control messages at the body's start), body (control
	// messages, payload) → N (bytes sent), A (cookie of an RDMA_MAP with
	// a cookie address, else 0).
	OpSend
	// OpRecv: A (MsgFlags), N (room), B (flags: the client takes
	// messages handed ahead, and asks for them pushed) → N (recvmsg's
	// result), A (msg flags), AddrPort (sender), B (payload bytes in the
	// body), C (bytes of control messages at the body's start), body; or
	// CodeAhead (the client holds the message). With ID 0: a reply is a
	// batch of messages handed ahead of the receives (C messages, B body
	// bytes; ahead.go), or with CodeAhead and nothing else the end of
	// pushes (the client's next receive asks); a request is a credit (B
	// marks it, C counts the handed messages read so far) with no reply.
	OpRecv
	// OpSetOption: A (OptionCode), B, C (values), AddrPort
	// (CancelSentTo) → nothing.
	OpSetOption
	// OpOption: A (OptionCode) → B, C (values).
	OpOption
	// OpPoll: → A (events).
	OpPoll
	// OpWait: A (events wanted) → A (events).
	OpWait
	// OpCancel: A (ID of a pending OpWait) → no reply of its own; the
	// wait answers CodeCanceled.
	OpCancel
	// OpBuffered: → A (send), B (receive).
	OpBuffered
	// OpGetMR: A (RDMAFlags), body (one Mem) → A (cookie).
	OpGetMR
	// OpFreeMR: A (cookie), B (RDMAFlags) → nothing.
	OpFreeMR
	// OpMRs: → A (mappings held).
	OpMRs
	// OpInfo: → body (the daemon's Stack.Info as JSON).
	OpInfo
	// OpRegion: the record carries a shared memory file descriptor
	// (SCM_RIGHTS); A (region ID the client names it by), B (size) →
	// nothing.
	OpRegion
	// OpRings: the client's first request, on the socket, with six
	// descriptors (SCM_RIGHTS): the files of the ring it writes, then of
	// the ring the daemon writes (shmring) → nothing, on the socket.
	// Every later record without descriptors travels in the rings.
	OpRings
	// OpStats: AddrPort (its address names a node) → body (the
	// daemon's NodeStats of that node as JSON); EADDRNOTAVAIL when the
	// daemon has no node there.
	OpStats

	opEnd
)

var opNames = [...]string{"", "bind", "close", "deadline", "send", "recv", "setsockopt", "getsockopt",
	"poll", "wait", "cancel", "buffered", "get_mr", "free_mr", "mrs", "info", "region", "rings", "stats"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "op?"
}

// Code is a reply's outcome: 0, a Linux errno (below 1<<16), or one of
// the outcomes that are not errnos.
type Code uint32

const (
	CodeOK Code = 0
	// CodeClosed: the socket is closed (net.ErrClosed).
	CodeClosed Code = 1<<16 + iota
	// CodeDeadline: a deadline passed (os.ErrDeadlineExceeded).
	CodeDeadline
	// CodeMsgTooBig: above RDS_MAX_MSG_SIZE (ErrMsgTooBig, EMSGSIZE).
	CodeMsgTooBig
	// CodeNotShared: RDMA memory that is not in a shared region.
	CodeNotShared
	// CodeCanceled: a wait the client canceled.
	CodeCanceled
	// CodeAhead: a receive whose message the client holds already,
	// handed ahead of it (the oldest of those it has not read).
	CodeAhead
)

// OptionCode names a socket option in OpSetOption and OpOption.
type OptionCode uint64

const (
	OptUnknown      OptionCode = iota // an option type the daemon cannot know: ENOPROTOOPT
	OptSendBuffer                     // B
	OptRecvBuffer                     // B
	OptSendTimeout                    // B (nanoseconds)
	OptRecvTimeout                    // B (nanoseconds)
	OptTransport                      // B
	OptCongMonitor                    // B (enable), C (mask)
	OptCancelSentTo                   // AddrPort
	OptRecvErr                        // B
	optEnd
)

// Valid reports whether c is a known option code.
func (c OptionCode) Valid() bool { return c < optEnd }
