// Package rtloop runs internal/perf's measurement loops, and is the only
// place where rdmactl reaches into the Go runtime. A loop runs in one of
// two modes, chosen once per process (Select):
//
//   - Detached: off the Go scheduler, as if in a blocking system call
//     (runtime.entersyscallblock and exitsyscall, reached by go:linkname,
//     as x/sys and gVisor do; go.dev/issue/67401 keeps them), with the
//     runtime's nanotime as the clock. No P runs during the loop, so the
//     runtime's monitor thread (sysmon) sleeps instead of preempting it
//     every 10 ms; sysmon is also moved to SCHED_IDLE (IdleSysmon) and
//     left parked before a loop starts (ParkSysmon), and a sole session's
//     latency loops run on a Thread with a private file table. Each of
//     those three is best effort: when the kernel refuses (no
//     /proc/self/task, sched_setattr or unshare denied), that part is
//     skipped and the loop runs without it.
//   - Plain: an ordinary loop on the scheduler (not on a locked thread:
//     see RunAttached), the same loop functions run attached and yield
//     about once a millisecond, with time from the monotonic clock of package time. No
//     linkname, no /proc, no scheduling policy. It is the fallback when
//     the detached mode is refused (RDMACTL_PERF_LOOP=plain, perf --loop
//     plain) or its probe fails, and what providers whose data path is not
//     fit to run detached (mlx5, the tests' fakes) always get.
//
// Why the detached mode exists, in short: on a machine whose CPUs are all
// busy (a latency pair on two CPUs, as in the test VM), every wake-up of a
// runtime thread preempts someone's loop, and those preemptions made most
// of the latency tail that single-threaded perftest does not have. The
// traced figures are in the commit messages of this code's history
// (git log --follow on the files here) and in the comments at each part.
// What it buys, from make bench-perftest (6.1 VM, 5 rounds, plain over
// detached): 2-byte write_lat median 1.19x (95% CI 1.04-1.36), p99 1.58x
// (1.22-2.05), 4 KiB p99 1.34x (1.15-1.55); bandwidth level.
//
// Code that runs detached must not grow the stack, allocate or write
// pointers into the heap (no P): every function on the path is
// //go:nosplit, results come back on the stack (Run's R), and the
// provider queues are the ones internal/verbs hands out for it
// (internal/verbs/detached.go).
package rtloop
