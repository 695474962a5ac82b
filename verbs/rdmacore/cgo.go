//go:build rdmacore

package rdmacore

// #cgo LDFLAGS: -libverbs -lrdmacm
// #include "shim.h"
import "C"

import "unsafe"

func unsafePointer[T any](p *T) unsafe.Pointer { return unsafe.Pointer(p) }

// cAddr passes a record in C memory to the shim as an integer: cgo checks
// every pointer argument of a call for Go pointers, which costs more than
// a short call itself on the hot path, and C memory needs no check.
func cAddr[T any](p *T) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }
