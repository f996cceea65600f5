//go:build vmtest

package provider

import (
	"errors"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/rxe"
)

// TestVMProviderSelection: on the VM (rxe only), the driver id NLDEV
// reports selects the rxe provider, not mlx5, and the mlx5-only entry
// points refuse rxe0 with NotMLX5Error naming its driver.
func TestVMProviderSelection(t *testing.T) {
	d, err := All().LookupDevice("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	if d.DriverID != verbs.DriverRXE || d.Driver != "rxe" {
		t.Fatalf("rxe0: driver id %d (%q), want %d (rxe) from NLDEV", d.DriverID, d.Driver, verbs.DriverRXE)
	}
	if _, ok := d.Provider.(rxe.Provider); !ok {
		t.Errorf("rxe0 got provider %T", d.Provider)
	}
	var nm *mlx5.NotMLX5Error
	if _, err := mlx5.OpenDevX(d); !errors.As(err, &nm) || nm.Driver != "rxe" || !errors.Is(err, verbs.ErrUnsupported) {
		t.Errorf("mlx5.OpenDevX(rxe0): %v", err)
	}
	c, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := (mlx5.DevX{Context: c}).MLX5DevXOther(make([]byte, 16), make([]byte, 16)); !errors.As(err, &nm) {
		t.Errorf("DEVX on rxe0: %v", err)
	}
	if _, err := All().LookupDevice("mlx5_0"); !verbs.IsNotFound(err) {
		t.Errorf("mlx5_0 on a machine without it: %v", err)
	}
}
