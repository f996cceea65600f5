//go:build vmtest

package vmcheck

import (
	"testing"

	"golang.org/x/sys/unix"
)

// LinkDown takes netdev down from the test's own process, as `ip link
// set NETDEV down` does (SIOCSIFFLAGS without IFF_UP; net/core/dev_ioctl.c).
// A fault meant for a moment of a run must come at that moment: an
// `ip` process is paged in from the guest's 9p root at each exec, which
// under TCG on a loaded host took longer than the 1.5 s a "last seconds"
// case leaves (a latency client then finished before its link went down).
// When it returns, rxe has taken the port down (its NETDEV_DOWN notifier
// runs inside the call, drivers/infiniband/sw/rxe/rxe_net.c).
func LinkDown(t testing.TB, netdev string) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(netdev)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		t.Fatalf("SIOCGIFFLAGS %s: %v", netdev, err)
	}
	ifr.SetUint16(ifr.Uint16() &^ unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("SIOCSIFFLAGS %s down: %v", netdev, err)
	}
}
