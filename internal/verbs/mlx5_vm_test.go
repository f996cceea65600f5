//go:build vmtest

package verbs

import (
	"errors"
	"testing"
)

// TestVMMLX5Selection: on the VM (rxe only), the driver id NLDEV reports
// selects the rxe provider, not mlx5, and the mlx5-only entry points refuse
// rxe0 with NotMLX5Error naming its driver.
func TestVMMLX5Selection(t *testing.T) {
	d, err := LookupDevice("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	if d.DriverID != DriverRXE || d.Driver != "rxe" {
		t.Fatalf("rxe0: driver id %d (%q), want %d (rxe) from NLDEV", d.DriverID, d.Driver, DriverRXE)
	}
	var nm *NotMLX5Error
	if _, err := OpenMLX5DevX(d); !errors.As(err, &nm) || nm.Driver != "rxe" || !errors.Is(err, ErrUnsupported) {
		t.Errorf("OpenMLX5DevX(rxe0): %v", err)
	}
	c, err := OpenDevice(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.prov.(*rxeContext); !ok {
		t.Errorf("rxe0 got provider %T", c.prov)
	}
	if err := c.MLX5DevXOther(make([]byte, 16), make([]byte, 16)); !errors.As(err, &nm) {
		t.Errorf("DEVX on rxe0: %v", err)
	}
	if _, err := LookupDevice("mlx5_0"); !IsNotFound(err) {
		t.Errorf("mlx5_0 on a machine without it: %v", err)
	}
}
