package inventory

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
)

// fakeHCA answers PRM commands like a ConnectX-5 would (a few fields).
type fakeHCA struct{ closed bool }

func (f *fakeHCA) Close() error { f.closed = true; return nil }

func (f *fakeHCA) MLX5DevXOther(in, out []byte) error {
	switch binary.BigEndian.Uint16(in) {
	case mlx5cmd.OpQueryHCACap:
		page := out[16:]
		switch binary.BigEndian.Uint16(in[6:]) >> 1 {
		case uint16(mlx5cmd.CapGeneral):
			page[0x1b8/8] = 1             // num_ports
			page[0x9b/8] = 0x12 & 0x1f    // log_max_qp = 18 (low 5 bits of byte 0x13)
			page[0x21d/8] |= 1 << (7 - 5) // roce (bit 0x21d = byte 0x43, bit 5 from MSB)
		case uint16(mlx5cmd.CapRoCE):
			page[0x98/8] = 2 // roce_version
		case uint16(mlx5cmd.CapQoS):
			out[0] = 0x02 // bad operation: this "device" has no QoS page
		}
	case mlx5cmd.OpQueryVportCounter:
		binary.BigEndian.PutUint64(out[16:], 3)
	case mlx5cmd.OpQueryCongStatus:
		if in[11]>>4 == 3 { // priority 3 enabled
			out[12] = 0x80
		}
	}
	return nil
}

func TestQueryHCACapsFakeDevice(t *testing.T) {
	d := verbs.Device{Name: "mlx5_0", Driver: "mlx5", DriverID: verbs.DriverMLX5}
	r, err := QueryHCACaps(&fakeHCA{}, d, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Device != "mlx5_0" || !r.DevX || r.Caps["general"]["num_ports"] != 1 || r.Caps["general"]["log_max_qp"] != 18 ||
		r.Caps["general"]["roce"] != 1 || r.Caps["roce"]["roce_version"] != 2 {
		t.Errorf("caps %+v", r)
	}
	if _, ok := r.Caps["qos"]; ok || len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "bad operation") {
		t.Errorf("QoS failure not reported as unavailable: %v", r.Unavailable)
	}
	if strings.Join(r.Pages, ",") != "general,roce,odp,atomic" || len(r.Order["general"]) != len(r.Caps["general"]) {
		t.Errorf("pages %v, general order %v", r.Pages, r.Order["general"])
	}
	if r.VportCounters["received_errors_packets"] != 3 || len(r.Order["vport_counters"]) != len(r.VportCounters) {
		t.Errorf("vport counters %v", r.VportCounters)
	}
	if len(r.CongStatus["rroce_rp"]) != 1 || r.CongStatus["rroce_rp"][0] != 3 {
		t.Errorf("cong status %v", r.CongStatus)
	}

	// Without DEVX: the pages only, the rest named as unavailable.
	r, err = QueryHCACaps(&fakeHCA{}, d, false)
	if err != nil || r.VportCounters != nil || r.CongStatus != nil || !strings.Contains(strings.Join(r.Unavailable, ";"), "need a DEVX context") {
		t.Errorf("without DEVX: %v %+v", err, r)
	}
	// The first page failing fails the device, with what to do.
	_, err = QueryHCACaps(refuse{}, d, false)
	if err == nil || !strings.HasPrefix(err.Error(), "mlx5_0: ") || !strings.Contains(err.Error(), "run as root") || !IsPermission(err) {
		t.Errorf("refused first page: %v", err)
	}
}

// refuse is a context the kernel refuses PRM commands on (no DEVX uid).
type refuse struct{}

func (refuse) MLX5DevXOther(in, out []byte) error {
	return &verbs.CommandError{Device: "mlx5_0", Op: "DEVX_OTHER", Errno: 13}
}

// verbsNL answers netlink's device dump and GET_CHARDEV for two devices,
// an mlx5 and an rxe one, with names no real system has.
type verbsNL struct{ NL }

func (verbsNL) Devices() ([]nldev.Device, error) {
	return []nldev.Device{{Index: 0, Name: "tmlx5_0"}, {Index: 1, Name: "trxe0"}}, nil
}

func (verbsNL) Chardev(dev uint32, typ string) (*nldev.Chardev, error) {
	abi, maj, min := uint64(1), uint32(231), 192+dev
	drv := uint32(verbs.DriverMLX5)
	if dev == 1 {
		drv = verbs.DriverRXE
	}
	return &nldev.Chardev{Name: "uverbs9" + string(rune('0'+dev)), ABI: &abi, Major: &maj, Minor: &min, DriverID: &drv}, nil
}

func TestHCACapsDeviceChecks(t *testing.T) {
	src := LiveWith(verbsNL{}, t.TempDir())
	_, err := src.HCACaps("trxe0")
	var nm *mlx5.NotMLX5Error
	if !errors.As(err, &nm) || !IsUnsupported(err) ||
		err.Error() != "trxe0 is not an mlx5 (ConnectX) device: its driver is rxe; hca-caps needs an mlx5 (ConnectX) device" {
		t.Errorf("rxe device: %v", err)
	}
	_, err = src.HCACaps("nosuch0")
	if !IsUnknown(err) || !strings.Contains(err.Error(), "tmlx5_0") {
		t.Errorf("unknown device: %v", err)
	}
}
