package perf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// idleSysmon moves the Go runtime's monitor thread (sysmon) to the
// SCHED_IDLE policy and returns its thread ID.
//
// Why: sysmon has no P and wakes every 20 us to 10 ms for as long as a
// goroutine runs. When every CPU spins (a latency pair on a two-CPU
// machine, as in the VM bench), each wake-up preempts a loop, and each
// preemption is a latency outlier (traced in the VM: 19 of the 26
// preemptions of the two loop threads during a 1000-iteration 2-byte
// write_lat pair were by their own sysmon; p99 about 2x perftest's). A
// SCHED_IDLE thread never preempts a normal one on wake-up and runs when
// a CPU is free or its tiny CFS share falls due. Traced again, the loop
// threads then saw 1 preemption by a runtime thread and 5 by the kernel's
// threads (rcu_preempt, ksoftirqd), as perftest's processes do. That
// share still falls due about every 100 ms of a loop (a 450 ms 4 KiB
// write_lat pair: 10 such preemptions, ~300 us each under TCG, beside ~20
// by ksoftirqd); only a thread that never wakes would avoid that, and the
// runtime has no switch for it.
//
// What it costs: during a loop on busy CPUs, sysmon's duties (polling the
// network when the scheduler does not, preempting goroutines that run
// over 10 ms, retaking Ps from long syscalls) wait for a free CPU. The
// loops yield (runner.maybeYield) and check Ctrl-C and their stall limit
// themselves. The peer watcher's socket is then polled when a CPU is free:
// a peer that dies frees one (TestVMPerfPeerKilled). An unprivileged process
// cannot switch a SCHED_IDLE thread back (sched(7), RLIMIT_NICE), so this
// is for the process's lifetime; only the rdmactl binary, where the perf
// command is all the process does, asks for it (Session.SoleSession).
// Once per process: the first call's result is returned to all.
var idleSysmon = sync.OnceValues(setIdleSysmon)

func setIdleSysmon() (int, error) {
	tid, err := findSysmon("/proc/self/task", unix.Gettid())
	if err != nil {
		return 0, err
	}
	attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
		return 0, fmt.Errorf("sched_setattr(thread %d, SCHED_IDLE): %w", tid, err)
	}
	return tid, nil
}

// errNoSysmon: no single thread of the process sleeps in nanosleep.
var errNoSysmon = errors.New("the Go runtime's monitor thread was not found")

// findSysmon returns the thread under task (/proc/self/task) that sleeps
// in nanosleep(2): the runtime's sysmon (runtime.usleep). Every other
// runtime thread parks on a futex, the caller's thread (self) excepted.
// It scans a few times, as sysmon may be running at any one scan, and
// wants one thread seen three times and no other more than once (the
// runtime naps in nanosleep elsewhere too, briefly and rarely).
//
// The caller must keep a P busy meanwhile: with every P idle, sysmon parks
// on a futex too, so the waits between scans spin.
func findSysmon(task string, self int) (int, error) {
	seen := map[int]int{}
	for try := 0; try < 50; try++ {
		ents, err := os.ReadDir(task)
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || tid == self {
				continue
			}
			b, err := os.ReadFile(task + "/" + e.Name() + "/syscall")
			if err != nil {
				continue // the thread exited, or no such file
			}
			if sleepsInNanosleep(b) {
				seen[tid]++
			}
		}
		if tid, ok := mostSeen(seen); ok {
			return tid, nil
		}
		for t := time.Now(); time.Since(t) < time.Millisecond; {
		}
	}
	return 0, fmt.Errorf("%w (threads in nanosleep, with the number of scans: %v)", errNoSysmon, seen)
}

// mostSeen returns the thread seen at least three times if every other
// was seen at most once.
func mostSeen(seen map[int]int) (int, bool) {
	best, others := 0, 0
	for tid, n := range seen {
		switch {
		case n >= 3 && best == 0:
			best = tid
		case n >= 2:
			others++
		}
	}
	return best, best != 0 && others == 0
}

// sleepsInNanosleep reports whether b, the content of
// /proc/PID/task/TID/syscall, shows a thread blocked in nanosleep: the
// syscall number comes first ("running" or -1 when it is not in one).
func sleepsInNanosleep(b []byte) bool {
	f, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte(" "))
	n, err := strconv.Atoi(string(f))
	return err == nil && n == unix.SYS_NANOSLEEP
}
