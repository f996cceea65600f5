package perf

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

type fakeNeeds struct {
	caps  uint32
	ports uint8
	dmah  bool
	err   error
}

func (f fakeNeeds) Device() verbs.Device { return verbs.Device{Name: "dev0"} }
func (f fakeNeeds) QueryDevice() (*verbs.DeviceAttr, error) {
	return &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{DeviceCapFlags: f.caps, PhysPortCnt: f.ports}}, f.err
}
func (f fakeNeeds) HasDMAHandles() (bool, error) { return f.dmah, f.err }

// A device or kernel without what the option needs: ErrUnsupported (exit
// 5) naming it; one with it: a RefusedError (exit 2), rdmactl lacking it;
// a failed query: that error.
func TestCheckDeviceNeeds(t *testing.T) {
	rxe := fakeNeeds{caps: 0x01223c76, ports: 1} // rxe's device_cap_flags (ibv_devinfo -v)
	xrc2 := fakeNeeds{caps: 0x01223c76 | deviceCapXRC, ports: 2, dmah: true}
	broken := fakeNeeds{err: errors.New("query failed")}
	for _, c := range []struct {
		name  string
		dev   fakeNeeds
		needs DeviceNeeds
		kind  string // "unsupported", "refused", "error", "none"
		want  string
	}{
		{"XRC on rxe", rxe, DeviceNeeds{XRC: true}, "unsupported", "-c XRC: dev0 has no XRC"},
		{"XRC on a device with it", xrc2, DeviceNeeds{XRC: true}, "refused", "rdmactl perf has no XRC transport"},
		{"-O on one port", rxe, DeviceNeeds{DualPort: true}, "unsupported", "-O: dev0 has 1 port"},
		{"-O on two", xrc2, DeviceNeeds{DualPort: true}, "refused", "-O: dev0 has 2 ports"},
		{"TPH without DMA handles", rxe, DeviceNeeds{TPH: true}, "unsupported", "--ph: this kernel has no DMA handles for dev0"},
		{"TPH with them", xrc2, DeviceNeeds{TPH: true}, "refused", "does not register memory with TPH hints"},
		{"query fails", broken, DeviceNeeds{XRC: true}, "error", "query failed"},
		{"probe fails", broken, DeviceNeeds{TPH: true}, "error", "query failed"},
		{"nothing", rxe, DeviceNeeds{}, "none", ""},
	} {
		err := checkDeviceNeeds(c.dev, c.needs)
		var re *RefusedError
		kind := "error"
		switch {
		case err == nil:
			kind = "none"
		case errors.As(err, &re):
			kind = "refused"
		case errors.Is(err, verbs.ErrUnsupported):
			kind = "unsupported"
		}
		if kind != c.kind || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %s %v, want %s %q", c.name, kind, err, c.kind, c.want)
		}
	}
}
