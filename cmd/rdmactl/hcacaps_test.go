package main

import (
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/spf13/cobra"
)

func fakeLookup(t *testing.T, d verbs.Device, err error) {
	old := hcaCapsLookup
	hcaCapsLookup = func(name string) (verbs.Device, error) {
		if err != nil {
			return verbs.Device{}, err
		}
		return d, nil
	}
	t.Cleanup(func() { hcaCapsLookup = old })
}

func TestHCACapsNotMLX5(t *testing.T) {
	fakeLookup(t, verbs.Device{Name: "rxe0", Driver: "rxe", DriverID: verbs.DriverRXE}, nil)
	stdout, stderr, code := runCmd(t, "dev", "hca-caps", "rxe0")
	if code != exitUnsupported || stdout != "" {
		t.Fatalf("code %d stdout %q", code, stdout)
	}
	want := "rdmactl: rxe0 is not an mlx5 (ConnectX) device: its driver is rxe; hca-caps needs an mlx5 (ConnectX) device\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

func TestHCACapsUnknownDevice(t *testing.T) {
	fakeLookup(t, verbs.Device{}, &verbs.DeviceNotFoundError{Name: "mlx5_0", Known: []string{"rxe0"}})
	_, stderr, code := runCmd(t, "dev", "hca-caps", "mlx5_0")
	if code != exitNotFound || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "mlx5_0") {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}

func TestHCACapsSysfsRoot(t *testing.T) {
	_, stderr, code := runCmd(t, "--sysfs-root", "/tmp", "dev", "hca-caps", "mlx5_0")
	if code != exitUnsupported || strings.Count(stderr, "\n") != 1 {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}

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

func TestHCACapsFakeDevice(t *testing.T) {
	fakeLookup(t, verbs.Device{Name: "mlx5_0", Driver: "mlx5", DriverID: verbs.DriverMLX5}, nil)
	f := &fakeHCA{}
	old := hcaCapsOpen
	hcaCapsOpen = func(verbs.Device) (hcaCapsSession, bool, error) { return f, true, nil }
	t.Cleanup(func() { hcaCapsOpen = old })

	stdout, stderr, code := runCmd(t, "-j", "dev", "hca-caps", "mlx5_0")
	if code != 0 {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
	if !f.closed {
		t.Error("device not closed")
	}
	var res []struct {
		Ifname        string                       `json:"ifname"`
		DevX          bool                         `json:"devx"`
		Caps          map[string]map[string]uint64 `json:"caps"`
		VportCounters map[string]uint64            `json:"vport_counters"`
		CongStatus    map[string][]int             `json:"cong_status"`
		Unavailable   []string                     `json:"unavailable"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	r := res[0]
	if r.Ifname != "mlx5_0" || !r.DevX || r.Caps["general"]["num_ports"] != 1 || r.Caps["general"]["log_max_qp"] != 18 ||
		r.Caps["general"]["roce"] != 1 || r.Caps["roce"]["roce_version"] != 2 {
		t.Errorf("caps %+v", r)
	}
	if _, ok := r.Caps["qos"]; ok || len(r.Unavailable) != 1 || !strings.Contains(r.Unavailable[0], "bad operation") {
		t.Errorf("QoS failure not reported as unavailable: %v", r.Unavailable)
	}
	if r.VportCounters["received_errors_packets"] != 3 {
		t.Errorf("vport counters %v", r.VportCounters)
	}
	if len(r.CongStatus["rroce_rp"]) != 1 || r.CongStatus["rroce_rp"][0] != 3 {
		t.Errorf("cong status %v", r.CongStatus)
	}

	stdout, _, code = runCmd(t, "dev", "hca-caps", "mlx5_0")
	if code != 0 || !strings.Contains(stdout, "log_max_qp") || !strings.Contains(stdout, "rroce_np_enabled_priorities") {
		t.Errorf("table:\n%s", stdout)
	}
}

// TestAddHCACapsFlag: the wrapper the lead wires into `dev query` runs
// hca-caps with the flag and the original command without it.
func TestAddHCACapsFlag(t *testing.T) {
	fakeLookup(t, verbs.Device{Name: "rxe0", Driver: "rxe", DriverID: verbs.DriverRXE}, nil)
	var o strings.Builder
	a := &app{stdout: &o}
	ran := false
	c := &cobra.Command{Use: "query", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	addHCACapsFlag(a, c)
	if err := c.RunE(c, []string{"rxe0/1"}); err != nil || !ran {
		t.Fatalf("without the flag: %v, ran %v", err, ran)
	}
	ran = false
	if err := c.Flags().Set("hca-caps", "true"); err != nil {
		t.Fatal(err)
	}
	err := c.RunE(c, []string{"rxe0/1"})
	if ran || err == nil || !strings.Contains(err.Error(), "rxe0 is not an mlx5") {
		t.Errorf("with --hca-caps: %v (ran %v)", err, ran)
	}
}
