// Package netns builds throw-away test hosts out of Linux network
// namespaces, for the tests under tests/ that need more than one network
// stack: a namespace per host (NS), veth pairs between them with IPv4
// addresses (Veth), a process or a function run inside a namespace
// (NS.Command, NS.Do), link faults (down/up, tc netem and tbf on a veth),
// and a userspace impairment link over TUN devices (TunLink) that applies
// the same faults as netem where the kernel has no sch_netem.
//
// It sits beside the library, not in it: it imports nothing from godapl and
// drives the kernel through iproute2 (`ip`, `tc`; scripts/install-deps.sh
// installs them) and a few syscalls (setns, the TUN ioctl). Everything it
// creates is named after the process id ("gd<pid>-<n>"), so concurrent
// test binaries never collide, and is removed by Close; Sweep removes what
// a killed test binary left behind.
//
// Creating namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN). Tests
// call Require(t), which skips with the reason when the process cannot.
package netns
