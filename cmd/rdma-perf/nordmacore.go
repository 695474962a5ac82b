//go:build !rdmacore

package main

import (
	"errors"

	"github.com/godapl/godapl/verbs"
)

// openRdmacore fails: the rdma-core provider needs cgo and the rdmacore
// build tag.
func openRdmacore(string) (verbs.Device, error) {
	return nil, errors.New("provider rdmacore: this rdma-perf was built without it (go build -tags rdmacore ./cmd/rdma-perf)")
}
