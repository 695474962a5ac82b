// Package memhook tells the module's registration caches that memory
// outside the Go heap is about to be unmapped.
//
// It sits below every layer: the code that unmaps memory it mapped
// itself (verbs.Mem's Free, the shared-memory regions of RDS's daemon)
// calls Unmapping before munmap, and a cache that keeps registrations of
// memory by address range (RDS over DAT's local registrations)
// subscribes and drops what overlaps. Go heap memory needs none of this:
// a registration keeps its slice alive, so its address is never reused
// while the registration exists. Memory outside the heap is different:
// once unmapped, another mapping may be placed at the same address, and
// a registration found by that address would name the old pages (which a
// device's MR still pins) instead of the new ones.
//
// The package imports the standard library only.
package memhook
