//go:build tour

// The tour test boots a VM (about 30-60 s under TCG), so it is not one of
// the unit tests: make tourtest runs it, and .ci/run does.

package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTour runs the README's first command (make tour) on this host and
// checks that it showed rdmactl at work in the VM: every step's heading and
// output, node GUIDs that are those of this boot's devices (iproute2's rdma
// -j dev show, written by the same VM boot through RDMACTL_TOUR_REF, is the
// reference), and a perf report with a non-zero bandwidth.
//
// On a host without RDMA (CI, most laptops) the first command itself goes
// to the VM, after one line that says why. On a host with RDMA devices it
// shows those instead; the test then checks that it said so and runs the
// VM tour with ARGS=--vm.
func TestTour(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	first := readmeFirstCommand(t, filepath.Join(root, "README.md"))
	ref := filepath.Join(t.TempDir(), "rdma-dev-show.json")

	out := runTour(t, root, first, ref)
	if strings.Contains(out, "rdmactl on this host's RDMA devices") {
		t.Logf("this host has RDMA devices and %q showed them; now the VM tour, with ARGS=--vm", first)
		out = runTour(t, root, first, ref, "ARGS=--vm")
	}
	checkTour(t, out, ref, filepath.Join(root, "README.md"))
}

// readmeFirstCommand returns the README's first command line (the first
// indented line, less its comment).
func readmeFirstCommand(t *testing.T, readme string) string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "    ") && strings.TrimSpace(l) != "" {
			cmd, _, _ := strings.Cut(l, "#")
			return strings.TrimSpace(cmd)
		}
	}
	t.Fatal("README.md has no command line")
	return ""
}

// runTour runs cmdline with bash in root, its output copied live to the
// test's stdout, and fails the test unless it succeeds.
func runTour(t *testing.T, root, cmdline, ref string, env ...string) string {
	t.Helper()
	if err := os.Remove(ref); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", cmdline)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), "RDMACTL_TOUR_REF="+ref), env...)
	var buf bytes.Buffer
	w := io.MultiWriter(&buf, os.Stdout)
	cmd.Stdout, cmd.Stderr = w, w
	t.Logf("running %q in %s", cmdline, root)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v after %s (its output is above)", cmdline, err, time.Since(start).Round(time.Second))
	}
	t.Logf("%q succeeded in %s", cmdline, time.Since(start).Round(time.Second))
	return buf.String()
}

var (
	headingRE = regexp.MustCompile(`^\$ rdmactl `)
	perfRE    = regexp.MustCompile(`^\$ rdmactl perf write -d rxe0 -n (\d+) & rdmactl perf write -d rxe1 -n (\d+) 10\.77\.0\.1$`)
	// fe80::<node GUID>: rxe's link-local GID holds the node GUID (both
	// are the EUI-64 of the veth's MAC address).
	gidRE  = regexp.MustCompile(`^(rxe[01])\s+1\s+0\s+fe80:0000:0000:0000:([0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4})\s`)
	guidRE = regexp.MustCompile(`^\s+node_guid:\s+([0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4})$`)
)

func checkTour(t *testing.T, out, ref, readme string) {
	t.Helper()
	// Split the output at the steps' headings; the lines from the tour
	// itself ("tour: ...") are the one that says why it goes to the VM,
	// before any step, or errors.
	lines := strings.Split(out, "\n")
	var notes []string
	var sections [][]string // each: heading, then output lines
	for _, l := range lines {
		switch {
		case headingRE.MatchString(l):
			sections = append(sections, []string{l})
		case strings.HasPrefix(l, "tour: "):
			notes = append(notes, l)
			if len(sections) > 0 {
				t.Errorf("tour: line after the first step: %q", l)
			}
		case len(sections) > 0:
			sections[len(sections)-1] = append(sections[len(sections)-1], l)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "running the tour in a qemu VM") {
		t.Errorf("want one line saying the tour runs in the VM, got %q", notes)
	}
	// The steps, in this order, each once.
	want := []string{"$ rdmactl link show", "$ rdmactl gids", "$ rdmactl dev query rxe0", "$ rdmactl perf write ", "$ rdmactl counters rxe0/1 --nonzero"}
	step := make([][]string, len(want))
	next := 0
	for _, sec := range sections {
		if next < len(want) && strings.HasPrefix(sec[0], want[next]) {
			step[next] = sec
			next++
		} else {
			t.Errorf("unexpected step %q (after %d of the %d expected)", sec[0], next, len(want))
		}
	}
	for _, w := range want[next:] {
		t.Errorf("missing step %q...", w)
	}
	link, gids, query, perf, counters := step[0], step[1], step[2], step[3], step[4]

	// link show: both ports ACTIVE.
	for _, p := range []string{"rxe0/1", "rxe1/1"} {
		if !hasLine(link, func(f []string) bool { return len(f) > 1 && f[0] == p && f[1] == "ACTIVE" }) {
			t.Errorf("link show: no ACTIVE %s in %q", p, link)
		}
	}

	// GUIDs: from gids (both devices) and dev query (rxe0); they must agree
	// with each other and with what rdma -j dev show said in the same boot.
	guids := map[string]string{}
	for _, l := range gids {
		if m := gidRE.FindStringSubmatch(l); m != nil {
			guids[m[1]] = m[2]
		}
	}
	queried := ""
	for _, l := range query {
		if m := guidRE.FindStringSubmatch(l); m != nil {
			queried = m[1]
		}
	}
	if queried == "" || queried != guids["rxe0"] {
		t.Errorf("dev query rxe0 shows node_guid %q, gids shows fe80::%s for rxe0", queried, guids["rxe0"])
	}
	b, err := os.ReadFile(ref)
	if err != nil {
		t.Fatalf("the VM tour wrote no reference (RDMACTL_TOUR_REF): %v", err)
	}
	var devs []struct {
		Ifname   string `json:"ifname"`
		NodeGUID string `json:"node_guid"`
	}
	if err := json.Unmarshal(b, &devs); err != nil {
		t.Fatalf("reference %s: %v: %s", ref, err, b)
	}
	seen := map[string]string{}
	for _, d := range devs {
		seen[d.Ifname] = d.NodeGUID
	}
	readmeText, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"rxe0", "rxe1"} {
		g := guids[dev]
		switch {
		case g == "":
			t.Errorf("gids: no fe80 GID for %s in %q", dev, gids)
		case seen[dev] != g:
			t.Errorf("%s: the tour shows node GUID %s, rdma -j dev show in the same VM %q", dev, g, seen[dev])
		case bytes.Contains(readmeText, []byte(g)):
			t.Errorf("%s: node GUID %s is the README's example, not this boot's", dev, g)
		}
	}
	if guids["rxe0"] != "" && guids["rxe0"] == guids["rxe1"] {
		t.Errorf("rxe0 and rxe1 have the same node GUID %s", guids["rxe0"])
	}

	// counters: the write reached rxe0.
	if counters != nil && !hasLine(counters, rcvdPkts) {
		t.Errorf("counters: no rcvd_pkts > 0 on rxe0 after the perf run: %q", counters)
	}

	// perf: the client's report, with the iterations asked for and a
	// non-zero bandwidth.
	if perf == nil {
		return
	}
	m := perfRE.FindStringSubmatch(perf[0])
	if m == nil || m[1] != m[2] {
		t.Fatalf("perf heading %q, want a server on rxe0 and a client on rxe1 to 10.77.0.1, same -n", perf[0])
	}
	row := ""
	for i, l := range perf {
		if strings.Contains(l, "#bytes") && strings.Contains(l, "BW average") && i+1 < len(perf) {
			row = perf[i+1]
		}
	}
	f := strings.Fields(row)
	if len(f) < 5 {
		t.Fatalf("perf: no report row in:\n%s", strings.Join(perf, "\n"))
	}
	if f[1] != m[1] {
		t.Errorf("perf report: %s iterations, the command asked for %s: %q", f[1], m[1], row)
	}
	for i, name := range map[int]string{2: "BW peak", 3: "BW average"} {
		if v, err := strconv.ParseFloat(f[i], 64); err != nil || v <= 0 {
			t.Errorf("perf report: %s %q, want > 0: %q", name, f[i], row)
		}
	}
}

// rcvdPkts: a counters row of rxe0's rcvd_pkts, non-zero.
func rcvdPkts(f []string) bool {
	if len(f) < 6 || f[0] != "rxe0" || f[3] != "rcvd_pkts" {
		return false
	}
	n, err := strconv.ParseUint(f[4], 10, 64)
	return err == nil && n > 0
}

// hasLine reports whether some line's fields satisfy ok.
func hasLine(lines []string, ok func([]string) bool) bool {
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 2 && ok(f) {
			return true
		}
	}
	return false
}
