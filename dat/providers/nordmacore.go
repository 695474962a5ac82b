//go:build !rdmacore

package providers

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// Without the rdmacore build tag godapl has no rdma-core provider: the
// registry lists the software IAs only.

func rdmacoreProviders() []verbs.Provider { return nil }

func rdmacoreEntries() ([]dat.Entry, error) { return nil, nil }
