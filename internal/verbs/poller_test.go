package verbs

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// pollerFDs counts the process's epoll descriptors (the runtime's network
// poller is one), looking through /proc/self/fd without an *os.File.
func pollerFDs() int {
	n := 0
	buf := make([]byte, 64)
	for fd := 0; fd < 1024; fd++ {
		l, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
		if err == nil && string(buf[:l]) == "anon_inode:[eventpoll]" {
			n++
		}
	}
	return n
}

// TestReadSysfsStartsNoPoller: readSysfs (CheckABI, NodeType...) opens no
// *os.File, whose first open starts the runtime's network poller; in a
// process of its own, as any os.Open of an earlier test would have started
// it. The probe is checked too: an os.Open then starts it.
func TestReadSysfsStartsNoPoller(t *testing.T) {
	testexec.RunIsolated(t, func(t *testing.T) {
		if n := pollerFDs(); n != 0 {
			t.Fatalf("%d epoll descriptors before the test: cannot tell", n)
		}
		if s, err := readSysfs("/proc/self/comm"); err != nil || s == "" {
			t.Fatalf("readSysfs: %q, %v", s, err)
		}
		if _, err := CheckABI(); err != nil {
			t.Logf("CheckABI: %v", err) // no uverbs here is fine: the read is what counts
		}
		if n := pollerFDs(); n != 0 {
			t.Fatalf("readSysfs started the network poller (%d epoll descriptors)", n)
		}
		f, err := os.Open("/proc/self/comm")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if n := pollerFDs(); n != 1 {
			t.Fatalf("the probe misses the poller an os.Open starts: %d epoll descriptors", n)
		}
	})
}
