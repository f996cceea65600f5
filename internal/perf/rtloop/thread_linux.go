package rtloop

import (
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Thread runs a session's detached latency loops on an OS thread of
// their own whose file descriptor table is private: a copy made with
// unshare(CLONE_FILES) when the thread starts. If unshare is refused (a
// seccomp profile, say), the thread runs them with the process's table,
// as the caller's thread would (Private reports which).
//
// Why: rxe's doorbell is a write(2) on the uverbs file, one on the
// critical path of every message. When a process's table is shared by
// several threads (every Go process), the kernel takes and drops a
// reference on the file for each call (fdget, fput), atomic operations
// that the single-threaded perftest does not pay. Traced in the VM
// (kprobes on rxe_post_send and the write syscall's entry, 2-byte
// write_lat between rdmactl and ib_write_lat in one pair, 16 runs each
// way, messages of both tools compared within each run): from syscall
// entry to rxe_post_send, rdmactl's doorbells took 1.109 (95% CI
// 1.03-1.19) and 1.090 (1.06-1.13) times perftest's, one figure per
// pairing of roles; on a thread with a private table 1.051 (0.99-1.12)
// and 0.938 (0.89-0.99). A write(2) to /dev/null under TCG: 1107 ns
// with the shared table, 944 ns with a private one. (scripts/trace-lat.sh
// measures this.)
//
// The copy holds a reference to every file that was open when it was
// made (the uverbs file, the TCP connection, ...), so that closing one
// elsewhere would not release it: Stop closes them all in the thread
// before it ends. Files opened after the start are not in it; the loops
// use only the uverbs file and sysmon's syscall file, both open before
// the first run (IdleSysmon opens the latter when the session starts).
type Thread[A, R any] struct {
	req, resp chan struct{}
	exited    chan struct{}
	started   bool
	private   bool // unshare worked; else the loops run with the shared table
	// the job: in before req, out before resp
	loop func(*A) R
	a    *A
	r    R
	// probe (tests): instead of a loop, check whether fd is open here
	probeFD   int
	probeOpen bool
}

// unshareFiles is unix.Unshare(CLONE_FILES); tests make it fail.
var unshareFiles = func() error { return unix.Unshare(unix.CLONE_FILES) }

// NewThread returns a Thread that starts at its first Run (after the
// session has opened sysmon's file); Stop ends it.
func NewThread[A, R any]() *Thread[A, R] {
	return &Thread[A, R]{req: make(chan struct{}), resp: make(chan struct{}), exited: make(chan struct{}), probeFD: -1}
}

func (t *Thread[A, R]) start() {
	if t.started {
		return
	}
	t.started = true
	ready := make(chan struct{})
	go t.serve(ready)
	<-ready
}

func (t *Thread[A, R]) serve(ready chan<- struct{}) {
	// Never unlocked: the thread ends with this goroutine, and its
	// private table with it.
	runtime.LockOSThread()
	defer close(t.exited)
	_ = leaveSchedIdle()
	t.private = unshareFiles() == nil
	close(ready)
	for range t.req {
		if t.probeFD >= 0 {
			_, err := unix.FcntlInt(uintptr(t.probeFD), unix.F_GETFD, 0)
			t.probeOpen = err == nil
		} else {
			t.r = Run(t.loop, t.a, true, true)
		}
		t.resp <- struct{}{}
	}
	if t.private {
		closeAllFiles()
	}
}

// Run runs loop(a) on the thread, detached (as Run with detach and
// handoff): for Detached mode only.
func (t *Thread[A, R]) Run(loop func(*A) R, a *A) R {
	t.start()
	t.loop, t.a = loop, a
	t.req <- struct{}{}
	<-t.resp
	t.loop, t.a = nil, nil
	r := t.r
	var zero R
	t.r = zero
	return r
}

// Private reports whether the thread, once started, has a private file
// table (false before its first Run, or if unshare was refused).
func (t *Thread[A, R]) Private() bool { return t.private }

// Stop ends the thread once its private table has let go of every file.
// Safe on nil and more than once.
func (t *Thread[A, R]) Stop() {
	if t == nil || !t.started {
		return
	}
	select {
	case <-t.exited:
		return
	default:
	}
	close(t.req)
	<-t.exited
}

// leaveSchedIdle moves the calling thread from SCHED_IDLE to the normal
// policy (nice 0). A thread inherits its creator's policy, and the
// runtime's monitor thread, SCHED_IDLE for a sole session (IdleSysmon),
// creates threads for the scheduler now and then: a loop on such a
// thread would be preempted by every wake-up on its CPU. Switching back
// needs privilege (CAP_SYS_NICE, or an RLIMIT_NICE that allows nice 0);
// without it the error is returned and the thread stays as it was.
func leaveSchedIdle() error {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return err
	}
	if attr.Policy != unix.SCHED_IDLE {
		return nil
	}
	return unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}, 0)
}

// closeAllFiles closes every descriptor in the calling thread's table.
func closeAllFiles() {
	if unix.CloseRange(0, ^uint(0), 0) == nil {
		return
	}
	// Before Linux 5.9: the descriptors this thread has.
	ents, err := os.ReadDir("/proc/thread-self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			_ = unix.Close(fd)
		}
	}
}
