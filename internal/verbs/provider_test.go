package verbs

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestProviderFacts: what the core asks the providers, with the answers
// it gave when it branched on the driver itself: ABI ranges and their
// refusal, firmware formats, ALLOC_PD's udata, the driver guessed without
// netlink.
func TestProviderFacts(t *testing.T) {
	for _, c := range []struct {
		d    Device
		want string
	}{
		{Device{Name: "rxe0", Driver: "rxe", DriverID: DriverRXE, ABI: 2}, ""},
		{Device{Name: "rxe0", Driver: "rxe", DriverID: DriverRXE, ABI: 3}, "rxe0: driver rxe uverbs ABI 3 is not supported by rdmactl (rxe 1..2, mlx5 1)"},
		{Device{Name: "mlx5_0", Driver: "mlx5", DriverID: DriverMLX5, ABI: 1}, ""},
		{Device{Name: "mlx5_0", Driver: "mlx5", DriverID: DriverMLX5, ABI: 2}, "mlx5_0: driver mlx5 uverbs ABI 2 is not supported by rdmactl (rxe 1..2, mlx5 1)"},
		{Device{Name: "efa_0", Driver: "efa", DriverID: 17, ABI: 99}, ""},
	} {
		err := c.d.checkABI()
		if got := ""; err != nil {
			got = err.Error()
			if got != c.want {
				t.Errorf("%s ABI %d: %q, want %q", c.d.Name, c.d.ABI, got, c.want)
			}
		} else if c.want != "" {
			t.Errorf("%s ABI %d accepted, want %q", c.d.Name, c.d.ABI, c.want)
		}
	}

	a := &DeviceAttr{FWVer: 16<<32 | 35<<16 | 2000}
	for id, want := range map[uint32]string{DriverMLX5: "16.35.2000", DriverRXE: "16.35.2000", 0: "16.35.2000"} {
		if got := a.FWVerString(id); got != want {
			t.Errorf("driver %d: fw %q, want %q", id, got, want)
		}
	}
	a.FWVer = 20<<32 | 1<<16 | 7
	if got := a.FWVerString(DriverMLX5); got != "20.1.0007" {
		t.Errorf("mlx5 fw %q, want 20.1.0007", got)
	}
	if got := a.FWVerString(DriverRXE); got != "20.1.7" {
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
	if h, pdn, err := (rxeProvider{}).AllocPD(exec); err != nil || h != 7 || pdn != 0 || in != nil || out != nil {
		t.Errorf("rxe ALLOC_PD: handle %d pdn %d err %v, udata %v/%v", h, pdn, err, in, out)
	}
	if h, pdn, err := (mlx5Provider{}).AllocPD(exec); err != nil || h != 7 || pdn != 0x42 || len(out) != 4 {
		t.Errorf("mlx5 ALLOC_PD: handle %d pdn %#x err %v, udata out %d bytes", h, pdn, err, len(out))
	}
}

func TestGuessDriverID(t *testing.T) {
	root := t.TempDir()
	ib := filepath.Join(root, "class", "infiniband")
	for name, module := range map[string]string{"mlx5_0": "mlx5_core", "mlx4_0": "mlx4_core", "rxe_odd": ""} {
		if err := os.MkdirAll(filepath.Join(ib, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if module != "" {
			drv := filepath.Join(root, "bus", "pci", "drivers", module)
			if err := os.MkdirAll(drv, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(ib, name, "device"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(drv, filepath.Join(ib, name, "device", "driver")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, want := range map[string]uint32{"mlx5_0": DriverMLX5, "mlx4_0": 0, "rxe_odd": DriverRXE, "rxe3": DriverRXE, "mlx5_9": DriverMLX5, "siw0": 0} {
		if got := guessDriverID(root, name); got != want {
			t.Errorf("%s: driver %d, want %d", name, got, want)
		}
	}
}
