package rtloop

import (
	"errors"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// probe asks the thread whether fd is open in its table.
func (t *Thread[A, R]) probe(fd int) bool {
	t.start()
	t.probeFD = fd
	t.req <- struct{}{}
	<-t.resp
	t.probeFD = -1
	return t.probeOpen
}

func TestLoopThreadPrivateTable(t *testing.T) {
	var before [2]int
	if err := unix.Pipe2(before[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(before[0])
	th := NewThread[int, int]()
	defer th.Stop()
	if !th.probe(before[1]) {
		t.Fatal("a file open before the thread started is not open in it")
	}
	if !th.Private() {
		t.Fatal("unshare(CLONE_FILES) failed")
	}
	var after [2]int
	if err := unix.Pipe2(after[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(after[0])
	defer unix.Close(after[1])
	if th.probe(after[1]) {
		t.Fatalf("fd %d, opened after the thread started, is open in it: its table is shared", after[1])
	}

	// Once stop returns, the thread's copy no longer holds the pipe's
	// write end: closing ours is the last close, and the reader sees EOF
	// (not EAGAIN, which means a writer is still open somewhere).
	th.Stop()
	th.Stop() // twice is fine
	if err := unix.Close(before[1]); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := unix.Read(before[0], b[:])
	if n != 0 || err != nil {
		t.Fatalf("read after the last close: %d, %v; want EOF (the thread still holds the write end)", n, err)
	}
}

func TestLoopThreadStopUnstarted(t *testing.T) {
	var th *Thread[int, int]
	th.Stop()
	NewThread[int, int]().Stop()
}

func TestLeaveSchedIdle(t *testing.T) {
	done := make(chan error)
	go func() {
		// A thread of its own, discarded after (never unlocked).
		runtime.LockOSThread()
		idle := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
		if err := unix.SchedSetAttr(0, idle, 0); err != nil {
			done <- err
			return
		}
		err := leaveSchedIdle()
		attr, gerr := unix.SchedGetAttr(0, 0)
		switch {
		case gerr != nil:
			done <- gerr
		case err == nil && attr.Policy != unix.SCHED_NORMAL:
			done <- errors.New("no error, but the thread is still SCHED_IDLE")
		case err != nil && !errors.Is(err, unix.EPERM):
			done <- err
		default:
			done <- nil // switched back, or not permitted to (EPERM)
		}
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Already normal: nothing to do.
	if err := leaveSchedIdle(); err != nil {
		t.Fatal(err)
	}
}

// When unshare is refused, the thread still runs its loops (detached),
// with the process's table, and says so.
func TestThreadWithoutUnshare(t *testing.T) {
	saved := unshareFiles
	unshareFiles = func() error { return unix.EPERM }
	defer func() { unshareFiles = saved }()
	th := NewThread[int, int]()
	defer th.Stop()
	n := 41
	if got := th.Run(addOne, &n); got != 42 {
		t.Fatalf("Run = %d, want 42", got)
	}
	if th.Private() {
		t.Fatal("Private with unshare refused")
	}
}

//go:nosplit
func addOne(p *int) int { return *p + 1 }
