package dev

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/spf13/cobra"
)

func TestHCACapsSysfsRoot(t *testing.T) {
	_, stderr, code := cmdtest.Run(t, NewCmd, "--sysfs-root", "/tmp", "dev", "hca-caps", "mlx5_0")
	if code != cmdutil.ExitUnsupported || strings.Count(stderr, "\n") != 1 {
		t.Errorf("code %d stderr %q", code, stderr)
	}
}

// TestHCACapsPrint renders a device's answer (inventory.QueryHCACaps has
// the fake ConnectX) as JSON and as the table.
func TestHCACapsPrint(t *testing.T) {
	caps := []inventory.HCACaps{{Device: "mlx5_0", Driver: "mlx5", DevX: true,
		Caps:  map[string]map[string]uint64{"general": {"num_ports": 1, "log_max_qp": 18}, "roce": {"roce_version": 2}},
		Pages: []string{"general", "roce"}, Order: map[string][]string{"general": {"log_max_qp", "num_ports"},
			"roce": {"roce_version"}, "vport_counters": {"received_errors_packets"}},
		VportCounters: map[string]uint64{"received_errors_packets": 3},
		CongStatus:    map[string][]int{"rroce_rp": {3}, "rroce_np": {}},
		Unavailable:   []string{"QUERY_HCA_CAP(qos): bad operation"}}}
	var o strings.Builder
	a := &cmdutil.App{Stdout: &o}
	a.Opts.JSON = true
	if err := printHCACaps(a, caps); err != nil {
		t.Fatal(err)
	}
	want := `[{"ifname":"mlx5_0","driver":"mlx5","devx":true,"caps":{"general":{"log_max_qp":18,"num_ports":1},"roce":{"roce_version":2}},` +
		`"vport_counters":{"received_errors_packets":3},"cong_status":{"rroce_np":[],"rroce_rp":[3]},"unavailable":["QUERY_HCA_CAP(qos): bad operation"]}]` + "\n"
	if o.String() != want {
		t.Errorf("json\n%s\nwant\n%s", o.String(), want)
	}
	var check []map[string]any
	if err := json.Unmarshal([]byte(o.String()), &check); err != nil {
		t.Fatal(err)
	}
	o.Reset()
	a.Opts.JSON = false
	if err := printHCACaps(a, caps); err != nil {
		t.Fatal(err)
	}
	wantTable := `DEV     GROUP           FIELD                              VALUE
mlx5_0  general         log_max_qp                         18
mlx5_0  general         num_ports                          1
mlx5_0  roce            roce_version                       2
mlx5_0  vport_counters  received_errors_packets            3
mlx5_0  cong_status     rroce_rp_enabled_priorities        [3]
mlx5_0  cong_status     rroce_np_enabled_priorities        []
mlx5_0  unavailable     QUERY_HCA_CAP(qos): bad operation  -
`
	if o.String() != wantTable {
		t.Errorf("table\n%s\nwant\n%s", o.String(), wantTable)
	}
}

// TestAddHCACapsFlag: the wrapper `dev query` has runs hca-caps with the
// flag (which fails here: no mlx5 device is named rxe0) and the original
// command without it.
func TestAddHCACapsFlag(t *testing.T) {
	var o strings.Builder
	a := &cmdutil.App{Stdout: &o}
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
	if ran || err == nil {
		t.Errorf("with --hca-caps: %v (ran %v)", err, ran)
	}
}
