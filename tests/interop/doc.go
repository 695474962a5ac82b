// Package interop holds the interoperability tests that put godapl on one
// end of a connection and the real Linux kernel on the other.
//
// It sits above every other layer: it imports nothing from the library yet
// and only drives processes. The kernel peers (siw with rdma-core's rping,
// RDS/TCP) run in the QEMU lab of tests/lab, a Debian 6.1 kernel
// booted from the host's own root file system. The Go side runs natively on
// the host inside the network namespace ratlab (192.168.77.1), the VM is
// 192.168.77.2 on the same bridge, so every byte between the two crosses a
// real kernel TCP stack and can be captured on br77.
//
// The tests are opt-in because one VM boot costs 10–16 s under TCG and needs
// root: they skip unless GODAPL_INTEROP=1, the process runs as root and the
// lab cache ($LAB_CACHE, default /var/cache/ratlab) holds a kernel. Prepare
// the cache with scripts/lab-setup.sh; `make interop` does both steps.
// TestMain boots one VM for the whole package and shares the repository
// with it, so binaries built into <repo>/bin are current inside the VM.
//
// Only the package's tests live here; the helper program the tests run on
// the host side is internal/tcpprobe. testdata/ keeps captures of kernel
// exchanges as hex text, the wire reference for the Go implementation.
package interop
