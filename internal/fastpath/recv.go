package fastpath

// RecvInProgress is an optional QP interface: how many receives the QP
// holds in progress, taken from its receive queue or its SRQ by an
// arriving message whose completion has not been generated yet. SRQ.Posted
// counts only what is still shared; a consumer that must say which QP
// holds a buffer (DAT's ep_recv_query on an SRQ EP) needs the per-QP
// count, which the verbs model has no query for. The value drops before
// the receive's completion is queued on the CQ, so once that completion
// is polled it no longer counts.
type RecvInProgress interface {
	RecvInProgress() int
}
