package rdstool

import (
	"errors"

	"github.com/godapl/godapl/rdsoverdat"
	"github.com/rs/zerolog"
)

// datTransport returns the dat transport for --transport dat: RDS over
// the DAT API over soft-iWARP, listening on conn_qual port (0: its
// default). It is the only place the tools name it.
func datTransport(port int, log *zerolog.Logger) (rdsoverdat.Transport, error) {
	return nil, errors.New("--transport dat: this build has no dat transport yet; use --transport tcp")
}
