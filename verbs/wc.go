package verbs

import "fmt"

// WCStatus is the outcome of a work request. The values follow
// libibverbs' enum ibv_wc_status for the statuses an RC QP can produce.
type WCStatus uint8

const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1  // message longer than the posted receive
	WCLocQPOpErr     WCStatus = 2  // internal QP error while processing the request
	WCLocProtErr     WCStatus = 4  // local SGE outside its MR, bad lkey, or missing local write
	WCWRFlushErr     WCStatus = 5  // flushed: the QP went to ERROR before the request ran
	WCMWBindErr      WCStatus = 6  // memory window bind failed
	WCBadRespErr     WCStatus = 7  // unexpected response from the peer
	WCLocAccessErr   WCStatus = 8  // local access violation on an inbound operation
	WCRemInvReqErr   WCStatus = 9  // peer found the request invalid (e.g. no STag to invalidate)
	WCRemAccessErr   WCStatus = 10 // peer refused the remote access (key, bounds, rights)
	WCRemOpErr       WCStatus = 11 // peer could not complete the operation (e.g. no receive posted)
	WCRemAbortErr    WCStatus = 16 // peer aborted the operation
	WCFatalErr       WCStatus = 19
	WCRespTimeoutErr WCStatus = 20 // the peer stopped answering
	WCGeneralErr     WCStatus = 21
)

var wcStatusNames = map[WCStatus]string{
	WCSuccess:        "success",
	WCLocLenErr:      "local length error",
	WCLocQPOpErr:     "local QP operation error",
	WCLocProtErr:     "local protection error",
	WCWRFlushErr:     "work request flushed",
	WCMWBindErr:      "memory window bind error",
	WCBadRespErr:     "bad response",
	WCLocAccessErr:   "local access error",
	WCRemInvReqErr:   "remote invalid request",
	WCRemAccessErr:   "remote access error",
	WCRemOpErr:       "remote operation error",
	WCRespTimeoutErr: "response timeout",
	WCRemAbortErr:    "remote aborted",
	WCFatalErr:       "fatal error",
	WCGeneralErr:     "general error",
}

func (s WCStatus) String() string {
	if n, ok := wcStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("WCStatus(%d)", uint8(s))
}

// WCOpcode says which kind of work request completed.
type WCOpcode uint8

const (
	WCSend WCOpcode = iota
	WCRDMAWrite
	WCRDMARead
	WCBindMW
	WCLocalInv
	WCRecv // a receive from the QP's receive queue or its SRQ
)

var wcOpcodeNames = [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "BIND_MW", "LOCAL_INV", "RECV"}

func (o WCOpcode) String() string {
	if int(o) < len(wcOpcodeNames) {
		return wcOpcodeNames[o]
	}
	return fmt.Sprintf("WCOpcode(%d)", uint8(o))
}

// WCOpcodeOf maps a send opcode to the opcode of its completion.
func WCOpcodeOf(op Opcode) WCOpcode {
	switch op {
	case OpRDMAWrite:
		return WCRDMAWrite
	case OpRDMARead:
		return WCRDMARead
	case OpBindMW:
		return WCBindMW
	case OpLocalInv:
		return WCLocalInv
	}
	return WCSend
}

// WCFlags carry details of a receive completion.
type WCFlags uint8

const (
	// WCWithInv: the message was a Send with Invalidate; InvalidatedRKey
	// holds the key that was invalidated.
	WCWithInv WCFlags = 1 << iota
	// WCSolicited: the sender asked for a solicited event.
	WCSolicited
)

// WC is a work completion.
type WC struct {
	ID              uint64 // the work request's ID
	Status          WCStatus
	Opcode          WCOpcode
	Flags           WCFlags
	ByteLen         uint32 // bytes received (receives) or transferred (RDMA Read)
	QPN             uint32 // the QP the request belonged to (for SRQ receives: the QP that consumed it)
	InvalidatedRKey uint32
	// VendorErr is reserved for provider detail on failed requests, as in
	// libibverbs. godapl's providers leave it 0: why a stream died is
	// reported once, as the *TerminateError of Conn.Err and of the QP's
	// async event.
	VendorErr uint32
}

// Solicited reports whether the completion satisfies a solicited-only
// wait: a solicited receive or any error.
func (wc *WC) Solicited() bool {
	return wc.Flags&WCSolicited != 0 || wc.Status != WCSuccess
}
