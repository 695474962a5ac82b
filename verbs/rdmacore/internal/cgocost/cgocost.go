//go:build rdmacore

// Package cgocost measures what one crossing from Go into C costs on the
// machine at hand, with the directives package rdmacore could give its
// hot C functions and without. The rdmacore provider crosses once per
// post and once per poll; on an emulated CPU a crossing is far dearer
// than on hardware, and its benchmarks say how much of a message's time
// the crossings can explain.
package cgocost

/*
#include <stdint.h>

static int64_t gd_cost_plain(uintptr_t p, int n) { return (int64_t)p + n; }

#cgo noescape gd_cost_directives
#cgo nocallback gd_cost_directives
static int64_t gd_cost_directives(uintptr_t p, int n) { return (int64_t)p + n; }

#cgo noescape gd_cost_ptr_directives
#cgo nocallback gd_cost_ptr_directives
static int64_t gd_cost_ptr_directives(int64_t *p, int n) { return *p + n; }
static int64_t gd_cost_ptr(int64_t *p, int n) { return *p + n; }
*/
import "C"

// Plain calls a C function that returns at once, taking integers only
// (as the provider's post and poll calls do).
func Plain(p uintptr, n int) int64 { return int64(C.gd_cost_plain(C.uintptr_t(p), C.int(n))) }

// Directives is Plain with #cgo noescape and #cgo nocallback.
func Directives(p uintptr, n int) int64 {
	return int64(C.gd_cost_directives(C.uintptr_t(p), C.int(n)))
}

// Ptr passes a pointer to Go memory, which cgo checks on every call.
func Ptr(v *int64, n int) int64 { return int64(C.gd_cost_ptr((*C.int64_t)(v), C.int(n))) }

// PtrDirectives is Ptr with #cgo noescape and #cgo nocallback.
func PtrDirectives(v *int64, n int) int64 {
	return int64(C.gd_cost_ptr_directives((*C.int64_t)(v), C.int(n)))
}
