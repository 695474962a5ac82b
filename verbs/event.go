package verbs

import "fmt"

// AsyncEventType names an asynchronous event.
type AsyncEventType uint8

const (
	EventQPFatal          AsyncEventType = iota // QP terminated by an error; see Err
	EventQPReqErr                               // peer sent an invalid request
	EventQPAccessErr                            // peer violated memory protection
	EventCommEstablished                        // first data arrived on a QP in RTR
	EventSQDrained                              // SQD reached with no send in flight
	EventQPLastWQEReached                       // QP on an SRQ left the connected states
	EventCQErr                                  // CQ overflowed; completions were lost
	EventSRQLimitReached                        // SRQ fell below its armed limit
	EventSRQErr                                 // SRQ failed
	EventDeviceFatal                            // device unusable
)

var asyncEventNames = [...]string{
	"QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"QP_LAST_WQE_REACHED", "CQ_ERR", "SRQ_LIMIT_REACHED", "SRQ_ERR", "DEVICE_FATAL",
}

func (t AsyncEventType) String() string {
	if int(t) < len(asyncEventNames) {
		return asyncEventNames[t]
	}
	return fmt.Sprintf("AsyncEventType(%d)", uint8(t))
}

// AsyncEvent is an event not tied to a work request. Exactly one of QP, CQ
// and SRQ is set, except for EventDeviceFatal.
type AsyncEvent struct {
	Type AsyncEventType
	QP   QP
	CQ   CQ
	SRQ  SRQ
	Err  error // detail, e.g. a *TerminateError for EventQPFatal
}

func (e AsyncEvent) String() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Type, e.Err)
	}
	return e.Type.String()
}

// AsyncEventQueueLen is the capacity of a device's async event channel.
// Events that find it full are dropped and counted in DeviceStats.
const AsyncEventQueueLen = 1024
