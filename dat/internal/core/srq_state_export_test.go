package core

import (
	"errors"

	"github.com/godapl/godapl/verbs"
)

// FailSRQ delivers to s the SRQ-error event of its verbs SRQ, which no
// provider raises on demand: the conformance test of dat_srq_post_recv's
// "valid in every SRQ state" needs an SRQ in the error state.
func FailSRQ(s *SRQ) {
	s.onAsync(verbs.AsyncEvent{Type: verbs.EventSRQErr, Err: errors.New("injected by the test")})
}
