//go:build rdmacore

package main

import (
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/rdmacore"
)

// openRdmacore opens the rdma-core device rdma_cm uses for addr, as
// rdma-core's rping does.
func openRdmacore(addr string) (verbs.Device, error) { return rdmacore.New().OpenAddr(addr) }
