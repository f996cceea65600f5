package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// top on captured trees: -b frames, the -j snapshot's keys, bad input.
func TestTopBatchAndJSON(t *testing.T) {
	out, errOut, code := runCmd(t, "--sysfs-root", mlx5Tree, "top", "-b", "-n", "2", "-i", "20ms", "--sort", "tx")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "rdmactl top - "); n != 2 || !strings.Contains(out, "sort tx") ||
		!strings.Contains(out, "DEV/PORT    STATE  LINK  TX") || !strings.Contains(out, "no process pane") {
		t.Errorf("%d frames:\n%s", n, out)
	}
	out, errOut, code = runCmd(t, "--sysfs-root", rxeTree, "-j", "top", "rxe1", "-i", "20ms")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"time", "interval_s", "ports", "processes", "events", "processes_error"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no key %q in %s", k, out)
		}
	}
	ports := doc["ports"].([]any)
	if len(ports) != 1 {
		t.Fatalf("ports %v", ports)
	}
	p := ports[0].(map[string]any)
	if p["ifname"] != "rxe1" || p["tx_packets_per_s"] != 0.0 || p["tx_bytes_per_s"] != nil {
		t.Errorf("rxe1 row %v", p)
	}
	for _, k := range []string{"link_gbps", "rx_link_share", "errors_per_s", "cnp_per_s", "ecn_marked_per_s", "notes"} {
		if _, ok := p[k]; !ok {
			t.Errorf("row lacks %q: %v", k, p)
		}
	}
}

func TestTopBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"top", "--sort", "bogus"}, cmdutil.ExitUsage, "--sort"},
		{[]string{"top", "-i", "0"}, cmdutil.ExitUsage, "--interval"},
		{[]string{"top", "-n", "-1"}, cmdutil.ExitUsage, "-n -1"},
		{[]string{"top", "nosuch", "-b", "-n", "1"}, cmdutil.ExitNotFound, "nosuch"},
		{[]string{"top"}, cmdutil.ExitUsage, "needs a terminal"}, // tests have no terminal
	} {
		_, errOut, code := runCmd(t, append([]string{"--sysfs-root", rxeTree}, c.args...)...)
		if code != c.code || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errOut)
		}
	}
}
