package mlx5

import (
	"errors"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// TestMLX5DevXChecks: a mailbox that cannot be a PRM command is refused
// before the kernel sees it, and another driver's device is refused with
// a NotMLX5Error (ErrUnsupported). The call's framing is the core's
// (verbs' TestDriverMethodFraming).
func TestMLX5DevXChecks(t *testing.T) {
	for _, c := range []struct{ in, out int }{{8, 32}, {16, 8}, {0x10000, 32}, {16, 0x10000}} {
		if err := checkMailboxes(make([]byte, c.in), make([]byte, c.out)); err == nil {
			t.Errorf("%d-byte command, %d-byte answer accepted", c.in, c.out)
		}
	}
	if err := checkMailboxes(make([]byte, 16), make([]byte, 32)); err != nil {
		t.Error(err)
	}
	var nm *NotMLX5Error
	_, err := OpenDevX(verbs.Device{Name: "rxe0", DriverID: verbs.DriverRXE, Driver: "rxe"})
	if !errors.As(err, &nm) || !errors.Is(err, verbs.ErrUnsupported) || err.Error() != "rxe0 is not an mlx5 (ConnectX) device: its driver is rxe" {
		t.Errorf("OpenDevX on rxe: %v", err)
	}
}

// TestMLX5ProviderSelected: the provider is found by the driver id NLDEV
// reports (RDMA_DRIVER_MLX5 = 1, checked against the header in
// TestMLX5Layout), and its DEVX request differs only in the flag.
func TestMLX5ProviderSelected(t *testing.T) {
	p := Provider{}
	if i := p.Info(); i.ID != verbs.DriverMLX5 || i.Name != "mlx5" {
		t.Fatalf("provider %d %q, want %d mlx5", i.ID, i.Name, verbs.DriverMLX5)
	}
	a, _ := p.ContextUData()
	b, _ := mlx5DevXContextUData()
	var ra, rb mlx5AllocUcontextReq
	copy(rawmem.Of(&ra), a)
	copy(rawmem.Of(&rb), b)
	if rb.Flags != mlx5AllocUctxDevX || ra.Flags != 0 {
		t.Errorf("flags %d / %d", ra.Flags, rb.Flags)
	}
	rb.Flags = 0
	if ra != rb {
		t.Errorf("DEVX request %+v differs from %+v beyond the flag", rb, ra)
	}
}
