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
	EventPortActive                             // a port came up; see AsyncEvent.Port
	EventPortErr                                // a port went down (link lost); see AsyncEvent.Port
)

var asyncEventNames = [...]string{
	"QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR", "COMM_EST", "SQ_DRAINED",
	"QP_LAST_WQE_REACHED", "CQ_ERR", "SRQ_LIMIT_REACHED", "SRQ_ERR", "DEVICE_FATAL",
	"PORT_ACTIVE", "PORT_ERR",
}

func (t AsyncEventType) String() string {
	if int(t) < len(asyncEventNames) {
		return asyncEventNames[t]
	}
	return fmt.Sprintf("AsyncEventType(%d)", uint8(t))
}

// AsyncEvent is an event not tied to a work request. Exactly one of QP, CQ
// and SRQ is set, except for EventDeviceFatal and the port events, which
// set Port instead.
type AsyncEvent struct {
	Type AsyncEventType
	QP   QP
	CQ   CQ
	SRQ  SRQ
	// Port is the device port (from 1) of EventPortActive and
	// EventPortErr. Connections over a port that went down are not ended
	// by the event: each fails on its own (retries exhausted, flushed).
	Port int
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
