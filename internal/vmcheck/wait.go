//go:build vmtest

package vmcheck

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// What the kernel tests wait for instead of sleeping a fixed time: under
// TCG on a busy host a process's start, its connection or its first
// packet can take any time, and a fault injected before the moment it is
// meant for tests another moment.

// Until polls cond every 20 ms until it holds (true), or d passes or
// ended reports true (false). ended may be nil.
func Until(d time.Duration, ended func() bool, cond func() bool) bool {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) || ended != nil && ended() {
			return false
		}
	}
}

// Closed is an ended func for Until: whether done is closed.
func Closed(done <-chan struct{}) func() bool {
	return func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// PortCounter reads rxe's hw_counters/NAME of dev's port 1
// (drivers/infiniband/sw/rxe/rxe_hw_counters.c: sent_pkts, rcvd_pkts,
// link_downed, ...).
func PortCounter(t testing.TB, dev, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s %s: %v", dev, name, err)
	}
	return v
}

// Sent is the packets rxe0 and rxe1 have sent together (sent_pkts): an
// RDMA CM run's device is the route's, either.
func Sent(t testing.TB) uint64 {
	t.Helper()
	return PortCounter(t, "rxe0", "sent_pkts") + PortCounter(t, "rxe1", "sent_pkts")
}

// TCPListening says whether a TCP socket of this network namespace
// listens on port (/proc/net/tcp{,6}: local address ends in :PORT, state
// 0A).
func TCPListening(port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			if fs := strings.Fields(l); len(fs) > 3 && strings.HasSuffix(fs[1], want) && fs[3] == "0A" {
				return true
			}
		}
	}
	return false
}

// CMListening says whether an RDMA CM id listens on port ('rdma res show
// cm_id': state LISTEN, src-addr ADDR:PORT), as an -R server does before
// a client may connect (perftest's client does not retry).
func CMListening(t testing.TB, port int) bool {
	t.Helper()
	ok, err := CMListens(port)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// CMListens is CMListening for callers without a test (a pair's
// goroutine): the error says why rdma could not answer.
func CMListens(port int) (bool, error) {
	out, err := exec.Command("rdma", "res", "show", "cm_id").CombinedOutput()
	if err != nil {
		return false, fmt.Errorf("rdma res show cm_id: %v: %s", err, out)
	}
	re := regexp.MustCompile(`state LISTEN .*src-addr \S+:` + strconv.Itoa(port) + `\b`)
	return re.Match(out), nil
}

// UserQPsOn is how many QPs of user processes device dev has (RDMA
// netlink's RES_QP dump, as QPsOf). A test whose device only one process
// uses so sees that process in a test without matching the thread the
// kernel names for each QP (the task that created it:
// rdma_restrack_set_name in drivers/infiniband/core/verbs.c), which
// QPsOf must find among the process's threads and, with the killed mesh
// rank, found too late (five times in seventeen 6.1 runs).
func UserQPsOn(t testing.TB, dev string) int {
	t.Helper()
	n := 0
	for _, q := range qpDump(t, func(d nldev.Device) bool { return d.Name == dev }) {
		if q.KernName == "" {
			n++
		}
	}
	return n
}

// QPsOf is how many QPs of process pid the kernel lists (RDMA netlink's
// RES_QP dump, what 'rdma res show qp' prints). The kernel names the
// thread that made each (task_pid_vnr of the creator,
// drivers/infiniband/core/nldev.c), which in a Go program is seldom the
// main one, so any thread of pid counts. It asks netlink from this
// process rather than running rdma, whose fork and exec take long on a
// loaded guest.
func QPsOf(t testing.TB, pid int) int {
	t.Helper()
	tids := map[uint32]bool{}
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, e := range ents {
		if tid, err := strconv.ParseUint(e.Name(), 10, 32); err == nil {
			tids[uint32(tid)] = true
		}
	}
	n := 0
	for _, q := range qpDump(t, func(nldev.Device) bool { return true }) {
		if q.PID != nil && tids[*q.PID] {
			n++
		}
	}
	return n
}

// qpDump is the kernel's QPs of the devices keep selects, through one
// netlink socket.
func qpDump(t testing.TB, keep func(nldev.Device) bool) []nldev.QP {
	t.Helper()
	c, err := nldev.Dial()
	if err != nil {
		t.Fatalf("RDMA netlink: %v", err)
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		t.Fatalf("RDMA netlink device dump: %v", err)
	}
	var mine []nldev.Device
	for _, d := range devs {
		if keep(d) {
			mine = append(mine, d)
		}
	}
	qps, err := c.QPsOf(mine)
	if err != nil {
		t.Fatalf("RDMA netlink QP dump: %v", err)
	}
	return qps
}
