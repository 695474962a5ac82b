//go:build rdmacore

package rdmacore

// #cgo LDFLAGS: -libverbs -lrdmacm
// #include "shim.h"
import "C"

import "unsafe"

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }
