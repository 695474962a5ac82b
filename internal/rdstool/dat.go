package rdstool

import (
	"fmt"

	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/rdsoverdat"
)

// datTransport returns the transport of --transport dat: RDS over the DAT
// API (rdsoverdat.DAT), its PSP on conn_qual port (0: the transport's
// default, 18634), each node opening the IA named ia (empty: soft-iWARP
// on the node's address). A name the registry does not hold fails here,
// before any socket binds. It is the one place the tools build it.
func datTransport(port int, ia string) (rdsoverdat.Transport, error) {
	cfg := rdsoverdat.DATConfig{Port: port, IA: ia}
	if ia != "" {
		// The default registry comes with an error when the interfaces
		// could not be listed; the IA may still be in it.
		reg, err := providers.Default()
		if reg == nil {
			return nil, fmt.Errorf("--ia %s: %w", ia, err)
		}
		if _, lerr := reg.Lookup(ia); lerr != nil {
			if err != nil {
				lerr = fmt.Errorf("%w (%v)", lerr, err)
			}
			return nil, fmt.Errorf("--ia %s: %w", ia, lerr)
		}
		cfg.Registry = reg
	}
	return rdsoverdat.DAT(cfg), nil
}
