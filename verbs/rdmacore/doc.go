// Package rdmacore is the verbs provider for real RDMA devices: it opens
// every device libibverbs knows (ConnectX mlx5_*, Intel irdma, the kernel's
// soft-RoCE rxe* and soft-iWARP siw*, ...) and implements package verbs on
// top of libibverbs and librdmacm with cgo.
//
// It sits beside verbs/siw and verbs/mem at the bottom of godapl's stack:
// dat/ and rdsoverdat/ reach it through the verbs.Provider it returns, and
// dat/providers lists an IA per device port when godapl is built with it.
//
// The package builds only with the build tag rdmacore, so that a plain
// build needs no C toolchain:
//
//	go build -tags rdmacore ./...
//
// which needs the rdma-core development files (Debian: libibverbs-dev,
// librdmacm-dev) and, at run time, libibverbs1, librdmacm1 and the
// user-space drivers of the devices (ibverbs-providers).
//
// Memory a device may access must not move while it is registered: RegMR
// accepts memory from verbs.AllocMem, or Go memory, which it pins for the
// registration's lifetime. Completion channels, async event files and
// rdma_cm event channels are non-blocking and waited on through Go's
// network poller, so no goroutine blocks inside C. Each CQ has a
// completion channel of its own, on which CQ.Wait parks the waiter itself:
// the completion event wakes the goroutine that polls, with none between.
// Posting a list of work
// requests and polling a batch of completions are one cgo call each, with
// the requests built in C memory each queue owns.
//
// A program that spins on its CQs should leave one P idle
// (runtime.GOMAXPROCS one above its spinning goroutines): a post on a
// software device (rxe, siw) runs the device's send path inside the C
// call, and when no P is idle Go's sysmon hands such a call's P to
// another thread, which costs a thread wake-up per post. Such a program
// may also give the provider the BusyPoll option (or set
// GODAPL_RDMACORE_BUSY_POLL), so that a poll of an empty CQ keeps
// polling inside C rather than crossing back into Go for every empty
// poll. And it should lock each spinning goroutine to its thread
// (runtime.LockOSThread): a goroutine the scheduler preempts may resume
// on another thread, which the kernel must then wake and place beside
// the device's work (with locked goroutines the idle P mattered
// little).
//
// The provider keeps Go's sysmon from signalling a goroutine that spins
// on Poll. Sysmon asks a goroutine that has run 10 ms without passing
// through the scheduler to yield and, unless the program runs with
// GODEBUG=asyncpreemptoff=1 (which only its environment can set),
// interrupts its thread with a signal to make it; on a software device
// that thread is usually inside the device's work. So a Poll yields
// (runtime.Gosched, with the CQ's lock released) once 5 ms have passed
// since the CQ last yielded: it reads the clock at every poll that finds
// completions and once per 64 polls of an empty device, and allocates
// nothing. In the lab's emulated VM a 92,000-Send stream
// (BenchmarkSendRate64) took 27 to 66 signals with the yield against 319
// to 424 without it (6 to 8 with asyncpreemptoff), and its threads 3 to
// 7 times fewer context switches. DAT's EVDs poll through PollLocked
// under the CQ's lock, where no yield can happen: PollLocked leaves a due
// yield to YieldDue (fastpath.CQYielder), which DAT calls once it has
// released the lock. On a quiet host, with the yield, the Send stream ran
// at a median 0.964 of ib_send_bw with both goroutines locked (0.846
// unlocked) and the Write 64 KiB stream at 0.958 of ib_write_bw locked
// (0.871 unlocked), nine reps each; before it, 0.72 locked and 0.86
// locked with preemption off for Send.
//
// Spin only with CPUs to spare. A software device does its work on the
// poster's CPU (rxe runs a Send's whole protocol path inside the post's
// system call), so where CPUs are scarce (a VM on a busy host, more
// spinning threads than cores) a goroutine spinning on an empty CQ takes
// CPU from the device it waits for, and Go's scheduler preempts a
// goroutine that never blocks every 10 ms, waking threads to do it.
// There, wait on the completion channel (CQ.Wait, which BusyPoll precedes
// with a short spin; DAT's EVD waits use it). In the lab's emulated VM a
// Send stream ran 3.2 times faster with both ends waiting than spinning
// while the host was loaded, and 1.1 to 1.8 times slower when it was not.
package rdmacore
