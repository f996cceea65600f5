package netdev

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMTU compares with sysfs for the host's loopback (every namespace has
// lo) and checks the errors of unknown and overlong names.
func TestMTU(t *testing.T) {
	s, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := os.ReadFile("/sys/class/net/lo/mtu")
	if err != nil {
		t.Fatalf("no /sys/class/net/lo/mtu to compare with: %v", err)
	}
	want, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.MTU("lo"); err != nil || uint64(got) != want {
		t.Errorf("MTU(lo) = %d, %v; sysfs says %d", got, err, want)
	}
	if _, err := s.MTU("nosuchnetdev0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("MTU(nosuchnetdev0) error = %v, want ErrNoDevice", err)
	}
	if _, err := s.MTU(strings.Repeat("x", 40)); err == nil {
		t.Error("MTU of a 40-byte name: no error")
	}
}
