package verbs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// fakeProvider answers the facts device discovery asks (ProviderInfo's
// ID, KernelModule and NamePrefix); its other methods are never called.
type fakeProvider struct {
	Provider
	info ProviderInfo
}

func (p fakeProvider) Info() ProviderInfo { return p.info }

// TestGuessDriverID: without netlink the driver is the provider whose
// kernel module drives the device's parent, else whose name prefix the
// device's name has.
func TestGuessDriverID(t *testing.T) {
	ps := Providers{fakeProvider{info: ProviderInfo{ID: DriverMLX5, KernelModule: "mlx5_core", NamePrefix: "mlx5_"}},
		fakeProvider{info: ProviderInfo{ID: DriverRXE, NamePrefix: "rxe"}}}
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
		if got := ps.guessDriverID(root, name); got != want {
			t.Errorf("%s: driver %d, want %d", name, got, want)
		}
	}
}

// TestDevicesIn: the uverbs devices of the captured rxe tree, through
// internal/sysfs: each node's device, number, ABI and driver (guessed
// from the name: rxe has no parent device), sorted by name; a node whose
// dev is unreadable is left out.
func TestDevicesIn(t *testing.T) {
	ps := Providers{fakeProvider{info: ProviderInfo{ID: DriverMLX5, KernelModule: "mlx5_core", NamePrefix: "mlx5_"}},
		fakeProvider{info: ProviderInfo{ID: DriverRXE, NamePrefix: "rxe"}}}
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("../sysfs/testdata/rxe")); err != nil {
		t.Fatal(err)
	}
	got := ps.devicesIn(sysfs.New(root))
	var s []string
	for _, d := range got {
		s = append(s, fmt.Sprintf("%s %s %s %d:%d abi %d %s", d.Name, d.Uverbs, d.Path, d.Major, d.Minor, d.ABI, d.Driver))
	}
	want := []string{"rxe0 uverbs0 /dev/infiniband/uverbs0 231:192 abi 2 rxe", "rxe1 uverbs1 /dev/infiniband/uverbs1 231:193 abi 2 rxe"}
	if !slices.Equal(s, want) {
		t.Fatalf("got %q\nwant %q", s, want)
	}
	if err := os.Remove(filepath.Join(root, "class/infiniband_verbs/uverbs0/dev")); err != nil {
		t.Fatal(err)
	}
	if got := ps.devicesIn(sysfs.New(root)); len(got) != 1 || got[0].Name != "rxe1" {
		t.Errorf("without uverbs0/dev: %+v, want rxe1 alone", got)
	}
}
