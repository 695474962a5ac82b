package rdstool

import "github.com/godapl/godapl/rdsoverdat"

// datTransport returns the transport of --transport dat: RDS over the DAT
// API over soft-iWARP (rdsoverdat.DAT), its PSP on conn_qual port (0: the
// transport's default, 18634). It is the one place the tools build it.
func datTransport(port int) rdsoverdat.Transport {
	return rdsoverdat.DAT(rdsoverdat.DATConfig{Port: port})
}
