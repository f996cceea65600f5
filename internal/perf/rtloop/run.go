package rtloop

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The detached mode's runtime functions. Run calls
// runtime.entersyscallblock, which hands the goroutine's P to the
// scheduler at once as for a blocking system call, runs the loop
// (//go:nosplit throughout), and calls runtime.exitsyscall, which takes a
// P back. In between, the caller's other goroutines (a peer watcher,
// Ctrl-C, progress) run on the freed P in other threads, and with no P
// running sysmon sleeps instead of waking every 10 ms. Both functions are
// exported to x/sys, the syscall package and gVisor this way and Go keeps
// their signatures (go.dev/issue/67401), as it does for nanotime, the
// monotonic clock time.Now reads.

//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Run runs loop(a) and returns its result: detached from the scheduler
// if detach (the caller checked that Selected is Detached and that the
// loop's queues may run detached), else attached (RunAttached). loop must then be //go:nosplit all the way down, store no
// pointers into the heap and leave its results in R (on this stack). a
// should already live on the heap: the call through a func value makes it
// escape. handoff: a latency loop, whose first message waits for the
// runtime's threads to settle (letHandoffRun).
func Run[A, R any](loop func(*A) R, a *A, detach, handoff bool) R {
	if !detach {
		return RunAttached(loop, a)
	}
	growStack()
	entersyscallblock()
	if handoff {
		letHandoffRun()
	}
	r := loop(a)
	exitsyscall()
	return r
}

// RunAttached runs loop(a) on the calling goroutine, as any Go code: the
// Plain mode. The loop must yield now and then (runtime.Gosched) if it
// never blocks: a nosplit loop is never preempted.
//
// Not on a locked OS thread: a locked goroutine that yields cannot go on
// running on its own thread; the runtime hands its P to another thread
// and back (stoplockedm, startlockedm), two thread wake-ups a yield, and
// it starts new threads for that, which allocate: with the loop locked,
// TestVMLoopsDoNotAllocate's plain runs on 6.12 counted 2 allocations per
// run and a bandwidth window with no messages in it. Unlocked, with
// nothing else to run (one P, as a sole session has), a yield returns on
// the same thread.
func RunAttached[A, R any](loop func(*A) R, a *A) R {
	return loop(a)
}

// letHandoffRun sleeps between entersyscallblock and a latency loop's
// first message: 2 ms, and longer, up to 10 ms in all, while the runtime's
// monitor thread (sysmon) has not yet parked.
//
// Why the 2 ms: entersyscallblock hands the P on, and as the only P (the
// binary runs with one) it must go to a thread that can poll the network
// for the peer watcher, so the runtime wakes one. In a latency pair both
// CPUs are busy, so that thread only got a CPU later by preempting a loop,
// ours or the peer's, mid-run. Traced in the VM (sched_switch, six
// 1000-iteration 2-byte write_lat pairs of rdmactl each way): without the
// sleep, 5 of the loops' 7 preemptions by their own runtime threads came
// mid-run (at 9-62 ms of 64-96 ms loops; each a latency outlier, and a few
// of them are what p99 of 1000 samples is made of); with it, the threads
// run on this CPU while it sleeps.
//
// Why longer: sysmon must park too (see ParkSysmon). It usually has
// within the 2 ms, as ParkSysmon left it napping briefly; if not, a
// little more time here costs less than a preemption mid-run.
//
// Only one sample can hold the sleep: when this side posts second, the
// peer's first, which already spans the difference between the two
// sides' start times (setup after the last handshake; the same with
// perftest).
//
//go:nosplit
func letHandoffRun() {
	sleepDetached(2e6)
	waitSysmonParked(8)
}

// sleepDetached sleeps ns nanoseconds (less than a second) with a raw
// nanosleep(2): usable detached, where time.Sleep is not.
//
//go:nosplit
func sleepDetached(ns int64) {
	ts := unix.Timespec{Nsec: ns}
	unix.RawSyscall(unix.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// growStack makes room on the goroutine's stack for the detached loop's
// frames: nosplit code cannot grow it, and it is not shrunk while the
// goroutine is in a system call. Its 16 KiB frame (the nosplit chains
// below a detached loop take about 1 KiB) makes the runtime grow the
// stack here if it is short; touchPad reads the array so that the
// compiler keeps it (a frame it could drop, it did).
//
//go:noinline
func growStack() byte {
	var pad [16 << 10]byte
	return touchPad(&pad)
}

//go:noinline
func touchPad(p *[16 << 10]byte) byte { return p[0] ^ p[len(p)-1] }
