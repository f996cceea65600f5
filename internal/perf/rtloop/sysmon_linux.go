package rtloop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IdleSysmon moves the Go runtime's monitor thread (sysmon) to the
// SCHED_IDLE policy for the rest of the process, in the Detached mode
// (a no-op in Plain). Best effort: if sysmon is not found or the kernel
// refuses, the error says why and nothing else changes (ParkSysmon then
// does nothing, and the loops run with sysmon as it is).
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
// loops yield (perf's yielder) and check Ctrl-C and their stall limit
// themselves. The peer watcher's socket is then polled when a CPU is free:
// a peer that dies frees one (TestVMPerfPeerKilled). An unprivileged process
// cannot switch a SCHED_IDLE thread back (sched(7), RLIMIT_NICE), so this
// is for the process's lifetime; only the rdmactl binary, where the perf
// command is all the process does, asks for it (perf.Session.SoleSession).
// Once per process: the first call's result is returned to all.
func IdleSysmon() error {
	if Selected() != Detached {
		return nil
	}
	_, err := idleSysmon()
	return err
}

// idleSysmon is IdleSysmon's work, once per process; it returns sysmon's
// thread ID.
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
	openSysmonSyscall(tid)
	return tid, nil
}

// ParkSysmon detaches from the scheduler until sysmon is in its deep
// sleep (at most 25 ms), so that it naps only briefly when the next
// loop starts. Called before a run's start handshake (perf's
// Session.settle); no-op when sysmon is unknown (IdleSysmon not called,
// it failed, or the mode is Plain).
//
// Why: with every P idle, as during a detached loop, sysmon parks on a
// futex until a P runs again, but it notices only when its current nap
// ends, and its naps grow to 10 ms while a P keeps running (setup). As a
// SCHED_IDLE thread (IdleSysmon), it then waits for a CPU, which in a
// latency pair it gets only when its share falls due, by preempting a
// loop. Traced (18 pairs of 1000-iteration 2-byte write_lat, sched_switch
// and syscalls, before this): in 2 pairs sysmon threads preempted the
// loops mid-run, at 9 and 48 ms and at 24 ms (the last one then parked on
// the runtime's sysmon note), while perftest's loops are never preempted
// by their own process. A parked sysmon is woken by the next system
// call, the handshake's, and that wake resets its naps to 20 us, so once
// the loop detaches it parks again within letHandoffRun's 2 ms, on this
// then idle CPU. The wait here happens while the peer waits in the
// exchange, as settle's work does.
func ParkSysmon() {
	if Selected() == Detached {
		parkSysmon()
	}
}

func parkSysmon() {
	if sysmonSyscallFD < 0 {
		return
	}
	growStack()
	entersyscallblock()
	waitSysmonParked(25)
	exitsyscall()
}

// waitSysmonParked sleeps in 1 ms steps, at most n, until sysmon is in its
// deep sleep (sysmonDeepSleepNow). For detached callers: no P is running,
// or sysmon would not park.
//
//go:nosplit
func waitSysmonParked(n int) {
	for i := 0; i < n && !sysmonDeepSleepNow(); i++ {
		sleepDetached(1e6)
	}
}

// sysmonSyscallFD is sysmon's /proc/self/task/TID/syscall, opened once
// idleSysmon has found it and kept open for the process's lifetime (-1
// before, or if it could not be opened), for sysmonDeepSleepNow. One
// file read again and again: opening it on each call freed a file (with
// RCU) each time, work that the kernel then did in the loops' first
// milliseconds.
var sysmonSyscallFD = -1

func openSysmonSyscall(tid int) {
	fd, err := unix.Open("/proc/self/task/"+strconv.Itoa(tid)+"/syscall", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		sysmonSyscallFD = fd
	}
}

// sysmonDeepSleepNow reports whether sysmon sleeps in futex(2): its deep
// sleep, which it enters when it wakes and finds every P idle, and in
// which it stays until a P runs again (exitsyscall wakes it) or the next
// timer is due. In its other sleep, usleep, it sits in nanosleep(2) for
// up to 10 ms and then runs its checks again. It reads sysmon's syscall
// file from offset 0 (the kernel makes it anew for each read there) with
// a raw pread: callers are detached (no P), so nothing here may allocate
// or grow the stack. False when sysmon is unknown or the read fails.
//
//go:nosplit
func sysmonDeepSleepNow() bool {
	if sysmonSyscallFD < 0 {
		return false
	}
	var buf [8]byte
	n, _, errno := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(sysmonSyscallFD), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
	n = min(n, uintptr(len(buf))) // a failed read returns -errno
	return errno == 0 && inSyscall(buf[:n], unix.SYS_FUTEX)
}

// inSyscall reports whether b, the start of a /proc/PID/task/TID/syscall
// file, shows a thread blocked in system call nr: the file starts with
// the number and a space ("202 0x7f... 0x80 ..."; "running" or "-1 ..."
// when it is in none). A number cut off by the end of b is not trusted.
//
//go:nosplit
func inSyscall(b []byte, nr int) bool {
	num, i := 0, 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && i < 9; i++ {
		num = num*10 + int(b[i]-'0')
	}
	return i > 0 && i < len(b) && (b[i] == ' ' || b[i] == '\n') && num == nr
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
