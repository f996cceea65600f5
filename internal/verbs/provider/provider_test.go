package provider

import (
	"encoding/binary"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/rxe"
)

// TestProviderFacts: what the core asks the providers, with the answers
// it gave when it branched on the driver itself: ABI ranges and their
// refusal, firmware formats, ALLOC_PD's udata, how a device without
// netlink is recognised.
func TestProviderFacts(t *testing.T) {
	dev := func(name string, id, abi uint32) verbs.Device {
		return All().NewDevice(name, "uverbs0", abi, 231, 192, id)
	}
	for _, c := range []struct {
		d    verbs.Device
		want string
	}{
		{dev("rxe0", verbs.DriverRXE, 2), ""},
		{dev("rxe0", verbs.DriverRXE, 3), "rxe0: driver rxe uverbs ABI 3 is not supported by rdmactl (rxe 1..2, mlx5 1)"},
		{dev("mlx5_0", verbs.DriverMLX5, 1), ""},
		{dev("mlx5_0", verbs.DriverMLX5, 2), "mlx5_0: driver mlx5 uverbs ABI 2 is not supported by rdmactl (rxe 1..2, mlx5 1)"},
		{dev("efa_0", 17, 99), ""},
	} {
		err := c.d.CheckProviderABI()
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%s ABI %d: %q, want %q", c.d.Name, c.d.ABI, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s ABI %d accepted, want %q", c.d.Name, c.d.ABI, c.want)
		}
	}

	a := &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{FWVer: 16<<32 | 35<<16 | 2000}}
	for id, want := range map[uint32]string{verbs.DriverMLX5: "16.35.2000", verbs.DriverRXE: "16.35.2000", 0: "16.35.2000"} {
		if got := a.FWVerString(dev("x", id, 1)); got != want {
			t.Errorf("driver %d: fw %q, want %q", id, got, want)
		}
	}
	a.FWVer = 20<<32 | 1<<16 | 7
	if got := a.FWVerString(dev("mlx5_0", verbs.DriverMLX5, 1)); got != "20.1.0007" {
		t.Errorf("mlx5 fw %q, want 20.1.0007", got)
	}
	if got := a.FWVerString(dev("rxe0", verbs.DriverRXE, 2)); got != "20.1.7" {
		t.Errorf("rxe fw %q, want 20.1.7", got)
	}

	var in, out []byte
	exec := func(i, o []byte) (uint32, error) {
		in, out = i, o
		if len(o) == 4 {
			binary.NativeEndian.PutUint32(o, 0x42)
		}
		return 7, nil
	}
	if h, pdn, err := (rxe.Provider{}).AllocPD(exec); err != nil || h != 7 || pdn != 0 || in != nil || out != nil {
		t.Errorf("rxe ALLOC_PD: handle %d pdn %d err %v, udata %v/%v", h, pdn, err, in, out)
	}
	if h, pdn, err := (mlx5.Provider{}).AllocPD(exec); err != nil || h != 7 || pdn != 0x42 || len(out) != 4 {
		t.Errorf("mlx5 ALLOC_PD: handle %d pdn %#x err %v, udata out %d bytes", h, pdn, err, len(out))
	}

	// Without netlink's driver id: mlx5 by its PCI driver, rxe by name.
	for _, c := range []struct {
		p              verbs.Provider
		module, prefix string
	}{{rxe.Provider{}, "", "rxe"}, {mlx5.Provider{}, "mlx5_core", "mlx5_"}} {
		if i := c.p.Info(); i.KernelModule != c.module || i.NamePrefix != c.prefix {
			t.Errorf("%s: module %q prefix %q, want %q %q", i.Name, i.KernelModule, i.NamePrefix, c.module, c.prefix)
		}
	}
}
