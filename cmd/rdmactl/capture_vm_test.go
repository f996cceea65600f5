//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// offlineAbsent are the keys live output has that a plain captured sysfs
// tree cannot give, with the reason; they must be absent with
// --sysfs-root. Every other key must agree with live output. A capture
// with its NLDEV dump (rdmactl/nldev.json) has all but bundleAbsent's.
var offlineAbsent = map[string]string{
	"ifindex":             "the NLDEV device index: netlink numbers devices, sysfs only names them",
	"protocol":            "NLDEV_ATTR_DEV_PROTOCOL: netlink only",
	"adaptive_moderation": "NLDEV_ATTR_DEV_DIM: netlink only",
	"caps":                "the device and port capability bits (-d): netlink only",
	"driver_id":           "enum rdma_driver_id from GET_CHARDEV: sysfs has the driver's name, not its id",
	"netns_mode":          "the RDMA netns mode (NLDEV SYS_GET): a system setting, not in sysfs",
	"max_mtu":             "-dd link show asks the device (uverbs QUERY_PORT); sysfs has no maximum MTU",
}

var bundleAbsent = map[string]string{"max_mtu": offlineAbsent["max_mtu"]}

// TestVMCaptureMatchesLive captures the live /sys with 'rdmactl capture'
// and requires --sysfs-root on the copy to print what the live commands
// print, but for the netlink-only keys of offlineAbsent, which must be
// absent. Counters move, so their names must agree and each captured value
// lie between a live read before and one after the capture.
func TestVMCaptureMatchesLive(t *testing.T) {
	pingpong(t) // traffic first (then none), so that counters are not all 0
	sysSources := []string{"counters", "--source", "counters,hw_counters"}
	before := byKey(ourList(t, append([]string{"-j"}, sysSources...)...), "ifname", "port", "source", "name")

	dir := filepath.Join(t.TempDir(), "sys")
	start := time.Now()
	stdout, stderr, code := runCmd(t, "capture", dir)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("capture %s: exit %d, stdout %q, stderr %q; want 0 and no output", dir, code, stdout, stderr)
	}
	t.Logf("capture took %v", time.Since(start).Round(time.Millisecond))
	after := byKey(ourList(t, append([]string{"-j"}, sysSources...)...), "ifname", "port", "source", "name")
	checkCaptureLayout(t, dir)

	// A second capture into the same directory refuses, in one line.
	if _, stderr, code := runCmd(t, "capture", dir); code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
		t.Errorf("capture into a non-empty directory: exit %d, %q; want %d and one line", code, stderr, cmdutil.ExitUsage)
	}

	cases := []struct {
		args []string
		key  []string
	}{
		{[]string{"link", "show"}, []string{"ifname", "port"}},
		{[]string{"-d", "link", "show"}, []string{"ifname", "port"}},
		{[]string{"-dd", "link", "show"}, []string{"ifname", "port"}},
		{[]string{"link", "show", "rxe1/1"}, []string{"ifname", "port"}},
		{[]string{"dev", "show"}, []string{"ifname"}},
		{[]string{"-d", "dev", "show"}, []string{"ifname"}},
		{[]string{"dev", "show", "rxe1"}, []string{"ifname"}},
		{[]string{"gids"}, []string{"ifname", "port", "index"}},
		{[]string{"-d", "gids"}, []string{"ifname", "port", "index"}},
		{[]string{"gids", "--all"}, []string{"ifname", "port", "index"}},
	}
	sawAbsent := map[string]bool{}
	for _, tc := range cases {
		compareOffline(t, dir, tc.args, tc.key, sawAbsent, bundleAbsent)
	}
	// The live side really came from netlink (otherwise the comparison
	// did not cover the dump's facts).
	for _, k := range []string{"ifindex", "netns_mode", "driver_id", "protocol", "caps", "max_mtu"} {
		if !sawAbsent[k] {
			t.Errorf("no live output had %s: the comparison did not cover it", k)
		}
	}

	// Counters: the same names; values between the two live reads.
	off := byKey(ourList(t, append([]string{"-j", "--sysfs-root", dir}, sysSources...)...), "ifname", "port", "source", "name")
	if len(off) == 0 || len(off) != len(before) || len(off) != len(after) {
		t.Errorf("counters: %d captured, %d live before, %d after", len(off), len(before), len(after))
	}
	nonzero := 0
	for k, o := range off {
		b, a := before[k], after[k]
		if b == nil || a == nil {
			t.Errorf("counters: %s captured, not live", k)
			continue
		}
		bv, ov, av := b["value"].(float64), o["value"].(float64), a["value"].(float64)
		if ov != 0 {
			nonzero++
		}
		if ov < bv || ov > av {
			t.Errorf("counters: %s: captured %v, live %v before and %v after", k, ov, bv, av)
		}
		if o["unit"] != a["unit"] {
			t.Errorf("counters: %s: unit %v offline, %v live", k, o["unit"], a["unit"])
		}
	}
	// Without --source, offline has the dump's netlink statistics: the
	// same names as live.
	nlNames := func(args ...string) map[string]bool {
		m := map[string]bool{}
		for _, o := range ourList(t, append([]string{"-j"}, append(args, "counters")...)...) {
			if o["source"] == "netlink" {
				m[fmt.Sprint(o["ifname"], "/", o["port"], " ", o["name"])] = true
			}
		}
		return m
	}
	if l, o := nlNames(), nlNames("--sysfs-root", dir); len(l) == 0 || !maps.Equal(l, o) {
		t.Errorf("netlink statistics: %d live, %d offline, or other names", len(l), len(o))
	}
	if nonzero == 0 {
		t.Error("every captured counter is 0 after ibv_rc_pingpong: the comparison proves little")
	}
	t.Logf("counters: %d compared, %d not 0", len(off), nonzero)

	// A hardware RoCE device has no parent file: the offline netdev then
	// comes from GID slot 0, which must name what netlink reports live.
	noParent := filepath.Join(t.TempDir(), "sys")
	if _, stderr, code := runCmd(t, "capture", noParent); code != 0 {
		t.Fatalf("capture: exit %d, %s", code, stderr)
	}
	parents, _ := filepath.Glob(filepath.Join(noParent, "class", "infiniband", "*", "parent"))
	for _, p := range parents {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if len(parents) == 0 {
		t.Fatal("rxe devices have a parent file; none was found in the capture")
	}
	// And without the NLDEV dump: a plain sysfs copy.
	if err := os.RemoveAll(filepath.Join(noParent, "rdmactl")); err != nil {
		t.Fatal(err)
	}
	t.Logf("without the parent files and the NLDEV dump:")
	compareOffline(t, noParent, []string{"link", "show"}, []string{"ifname", "port"}, map[string]bool{}, offlineAbsent)
}

// compareOffline runs rdmactl -j args live and with --sysfs-root dir and
// requires the same entries (by key), each with the same keys and values,
// but for absent's, which must be absent offline (noted in saw).
func compareOffline(t *testing.T, dir string, args, key []string, saw map[string]bool, absent map[string]string) {
	t.Helper()
	name := strings.Join(args, " ")
	live := byKey(ourList(t, append([]string{"-j"}, args...)...), key...)
	off := byKey(ourList(t, append([]string{"-j", "--sysfs-root", dir}, args...)...), key...)
	if len(live) == 0 {
		t.Errorf("%s: live output is empty", name)
	}
	for k, lo := range live {
		oo, ok := off[k]
		if !ok {
			t.Errorf("%s: %s is live, not in the capture", name, k)
			continue
		}
		for key, lv := range lo {
			ov, has := oo[key]
			if _, netlinkOnly := offlineAbsent[key]; netlinkOnly {
				saw[key] = true
			}
			if why, netlinkOnly := absent[key]; netlinkOnly {
				saw[key] = true
				if has {
					t.Errorf("%s: %s: offline has %s=%v, which it cannot know (%s)", name, k, key, ov, why)
				}
				continue
			}
			if !has {
				t.Errorf("%s: %s: live %s=%s, offline has no %s", name, k, key, jsonText(lv), key)
			} else if jsonText(lv) != jsonText(ov) {
				t.Errorf("%s: %s: %s: live %s, offline %s", name, k, key, jsonText(lv), jsonText(ov))
			}
		}
		for key, ov := range oo {
			if _, has := lo[key]; !has {
				t.Errorf("%s: %s: offline has %s=%s, live has none", name, k, key, jsonText(ov))
			}
		}
	}
	for k := range off {
		if _, ok := live[k]; !ok {
			t.Errorf("%s: %s is in the capture, not live", name, k)
		}
	}
	t.Logf("%s: %d entries compared", name, len(live))
}

// checkCaptureLayout: the tree looks like the fixtures
// (internal/sysfs/testdata): class entries as directories, no symlink
// leading out of it, UNREADABLE present.
func checkCaptureLayout(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, "class", "infiniband"))
	if err != nil || len(ents) < 2 {
		t.Fatalf("capture: class/infiniband: %d entries, %v", len(ents), err)
	}
	live, _ := os.ReadDir("/sys/class/infiniband")
	if len(live) != len(ents) {
		t.Errorf("capture has %d devices, /sys %d", len(ents), len(live))
	}
	for _, e := range ents {
		if !e.IsDir() {
			t.Errorf("capture: class/infiniband/%s is %v, want a directory", e.Name(), e.Type())
		}
	}
	files, links := 0, 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walk %s: %v", p, err)
			return nil
		}
		if d.Type()&os.ModeSymlink != 0 {
			links++
			tgt, _ := os.Readlink(p)
			if filepath.IsAbs(tgt) || !strings.HasPrefix(filepath.Join(filepath.Dir(p), tgt), dir+"/") {
				t.Errorf("capture: %s -> %s leads out of the copy", p, tgt)
			}
		} else if d.Type().IsRegular() {
			files++
		}
		return nil
	})
	unread, err := os.ReadFile(filepath.Join(dir, "UNREADABLE"))
	if err != nil {
		t.Errorf("capture: %v", err)
	}
	lines := slices.DeleteFunc(strings.Split(string(unread), "\n"), func(s string) bool { return s == "" })
	t.Logf("capture: %d devices, %d files, %d symlinks, %d unreadable %q", len(ents), files, links, len(lines), lines)
}

// jsonText is a value as JSON, to compare values of any type.
func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
