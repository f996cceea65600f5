package doctor

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

func TestParseExpect(t *testing.T) {
	for in, want := range map[string]Expect{
		"ports=8":                   {Ports: 8},
		"rate=400":                  {RateGbps: 400},
		"rate=200Gbps,mtu=4096":     {RateGbps: 200, MTU: 4096},
		"mtu=1024, ports=2,rate=25": {Ports: 2, RateGbps: 25, MTU: 1024},
	} {
		got, err := ParseExpect(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for in, words := range map[string]string{
		"":                "empty",
		"ports":           "KEY=VALUE",
		"ports=0":         "1 or more",
		"ports=x":         "count",
		"rate=-1":         "Gb/s",
		"rate=NaN":        "Gb/s",
		"mtu=1500":        "256, 512",
		"speed=100":       `unknown key "speed"`,
		"ports=1,ports=2": "twice",
	} {
		if _, err := ParseExpect(in); err == nil || !strings.Contains(err.Error(), words) {
			t.Errorf("%q: %v, want an error with %q", in, err, words)
		}
	}
}

// runExpect runs x's checks on a captured tree, by "check target".
func runExpect(t *testing.T, dir string, x Expect) map[string]Result {
	t.Helper()
	out := map[string]Result{}
	for _, r := range Run(&Env{Src: inventory.Captured(dir)}, x.Checks()) {
		k := r.Check
		if r.Device != "" {
			k += " " + r.Device + "/" + string(rune('0'+r.Port))
		}
		out[k] = r
	}
	return out
}

// TestExpect: on the captured mlx5 host (two ports ACTIVE at 100 Gb/s)
// and the rxe VM (two ports at 10 Gb/s).
func TestExpect(t *testing.T) {
	mlx := runExpect(t, "../sysfs/testdata/mlx5", Expect{Ports: 2, RateGbps: 100, MTU: 4096})
	want(t, mlx, "expect_ports", Pass, "2 of 2 ports ACTIVE, 2 expected")
	want(t, mlx, "expect_rate mlx5_0/1", Pass, "rate 100 Gb/s, 100 expected")
	// The active MTU is the device's answer: on a capture, skipped.
	want(t, mlx, "expect_mtu", Skip, "needs the live system")

	mlx = runExpect(t, "../sysfs/testdata/mlx5", Expect{Ports: 3, RateGbps: 200})
	want(t, mlx, "expect_ports", Fail, "2 of 2 ports ACTIVE, 3 expected")
	want(t, mlx, "expect_rate mlx5_1/1", Fail, "rate 100 Gb/s, 200 expected")
	if len(mlx) != 3 {
		t.Errorf("results %v, want expect_ports and one expect_rate a port", mlx)
	}

	rxe := runExpect(t, "../sysfs/testdata/rxe", Expect{RateGbps: 25})
	want(t, rxe, "expect_rate rxe0/1", Fail, "rate 10 Gb/s, 25 expected")
	if r := rxe["expect_rate rxe0/1"]; !strings.Contains(r.Fix, "ethtool vrxe0") {
		t.Errorf("fix %q: want the netdev's ethtool", r.Fix)
	}
}

// TestExpectMTU judges the active MTU from inventory ports, as the live
// system gives them.
func TestExpectMTU(t *testing.T) {
	mtu := func(n uint32) *uint32 { return &n }
	env := &Env{loaded: true, ports: []inventory.Port{
		{Dev: "rxe0", Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", Netdev: "eth0", ActiveMTU: mtu(1024)},
		{Dev: "rxe1", Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", Netdev: "eth1", ActiveMTU: mtu(4096)},
		{Dev: "rxe2", Port: 1, State: "DOWN", LinkLayer: "Ethernet", Netdev: "eth2", ActiveMTU: mtu(256)},
	}}
	got := map[string]Result{}
	for _, r := range (Expect{MTU: 4096}).checkMTU(env) {
		got[r.Device] = r
	}
	if r := got["rxe0"]; r.Status != Fail || r.Evidence != "active MTU 1024, 4096 expected" || !strings.Contains(r.Fix, "'ip link set eth0 mtu 9000'") {
		t.Errorf("rxe0: %+v", r)
	}
	if r := got["rxe1"]; r.Status != Pass {
		t.Errorf("rxe1: %+v", r)
	}
	if _, ok := got["rxe2"]; ok || len(got) != 2 {
		t.Errorf("a port not ACTIVE judged: %+v", got)
	}
}
