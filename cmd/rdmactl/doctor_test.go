package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

const doctorFixtures = "../../internal/doctor/testdata/"

// doctorOut is -j doctor, decoded as generic maps so that the test sees
// the keys as a script does.
func doctorOut(t *testing.T, args ...string) (map[string]any, int) {
	t.Helper()
	out, stderr, code := runCmd(t, append([]string{"-j"}, args...)...)
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %v\n%s%s", args, err, out, stderr)
	}
	return v, code
}

func TestDoctorExitAndJSON(t *testing.T) {
	// A healthy capture: exit 0, nothing on stderr.
	out, stderr, code := runCmd(t, "--sysfs-root", rxeTree, "doctor")
	if code != 0 || stderr != "" || !strings.Contains(out, "PASS    port_state") {
		t.Errorf("rxe: exit %d, stderr %q\n%s", code, stderr, out)
	}
	// A FAIL: the report on stdout, one line on stderr, exit 8.
	out, stderr, code = runCmd(t, "--sysfs-root", doctorFixtures+"ibnosm", "doctor")
	if code != cmdutil.ExitDoctorFail || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "FAIL") {
		t.Errorf("ibnosm: exit %d, stderr %q; want %d and one line", code, stderr, cmdutil.ExitDoctorFail)
	}
	if !strings.Contains(out, "FAIL    ib_sm") || !strings.Contains(out, "fix: start a subnet manager") {
		t.Errorf("ibnosm table:\n%s", out)
	}

	v, code := doctorOut(t, "--sysfs-root", doctorFixtures+"pcie", "doctor")
	if code != cmdutil.ExitDoctorFail {
		t.Errorf("pcie -j: exit %d", code)
	}
	if v["offline"] != true {
		t.Errorf("offline = %v", v["offline"])
	}
	sum := v["summary"].(map[string]any)
	rs := v["results"].([]any)
	if n := sum["pass"].(float64) + sum["warn"].(float64) + sum["fail"].(float64) + sum["skip"].(float64); int(n) != len(rs) || sum["fail"].(float64) != 1 {
		t.Errorf("summary %v for %d results", sum, len(rs))
	}
	var found bool
	for _, r := range rs {
		m := r.(map[string]any)
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if strings.Join(keys, ",") != "check,device,evidence,fix,port,status" {
			t.Fatalf("result keys %v", keys)
		}
		if m["check"] == "pcie_link" && m["device"] == "mlx5_0" {
			found = true
			if m["status"] != "FAIL" || !strings.Contains(m["evidence"].(string), "x8") || m["fix"] == "" {
				t.Errorf("pcie_link mlx5_0: %v", m)
			}
		}
	}
	if !found {
		t.Error("no pcie_link result for mlx5_0")
	}

	// Only the named checks.
	v, code = doctorOut(t, "--sysfs-root", doctorFixtures+"fwmismatch", "doctor", "--check", "firmware")
	if code != 0 || len(v["results"].([]any)) != 2 || v["summary"].(map[string]any)["warn"].(float64) != 2 {
		t.Errorf("--check firmware: exit %d, %v", code, v)
	}
}

func TestDoctorBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--sysfs-root", rxeTree, "doctor", "--check", "nope"}, cmdutil.ExitUsage, "unknown check"},
		{[]string{"--sysfs-root", rxeTree, "doctor", "--watch", "-1s"}, cmdutil.ExitUsage, "negative"},
		{[]string{"--sysfs-root", rxeTree, "doctor", "--watch", "soon"}, cmdutil.ExitUsage, "invalid"},
		{[]string{"--sysfs-root", rxeTree, "doctor", "extra"}, cmdutil.ExitUsage, "unknown command"},
		{[]string{"--sysfs-root", "/nonexistent", "doctor"}, cmdutil.ExitUsage, "--sysfs-root /nonexistent: no such file or directory"},
		{[]string{"--sysfs-root", t.TempDir(), "doctor"}, cmdutil.ExitUnsupported, "captured tree"},
	} {
		out, stderr, code := runCmd(t, tc.args...)
		if code != tc.code || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}

// TestCaptureBundleFile: capture FILE.tar.gz of a fixture reads back with
// --sysfs-root FILE as the tree itself does; a file that is not a bundle
// is exit 2 with one line; the unpacked copy does not outlive the command.
func TestCaptureBundleFile(t *testing.T) {
	file := t.TempDir() + "/b.tar.gz"
	if out, stderr, code := runCmd(t, "--sysfs-root", doctorFixtures+"pcie", "capture", file); code != 0 || out != "" || stderr != "" {
		t.Fatalf("capture: exit %d %q %q", code, out, stderr)
	}
	if _, stderr, code := runCmd(t, "--sysfs-root", doctorFixtures+"pcie", "capture", file); code != cmdutil.ExitUsage || !strings.Contains(stderr, "not empty") {
		t.Errorf("capture over an existing file: exit %d %q", code, stderr)
	}
	tmpBefore, _ := filepath.Glob(filepath.Join(os.TempDir(), "rdmactl-bundle-*"))
	for _, args := range [][]string{{"-j", "link", "show"}, {"-j", "dev", "show"}, {"-j", "gids"}, {"-j", "counters"}, {"-j", "doctor"}} {
		want, wantErr, wantCode := runCmd(t, append([]string{"--sysfs-root", doctorFixtures + "pcie"}, args...)...)
		got, gotErr, gotCode := runCmd(t, append([]string{"--sysfs-root", file}, args...)...)
		if got != want || gotErr != wantErr || gotCode != wantCode || want == "" {
			t.Errorf("%v: the bundle shows\n%s%s(exit %d)\nthe tree\n%s%s(exit %d)", args, got, gotErr, gotCode, want, wantErr, wantCode)
		}
	}
	if tmpAfter, _ := filepath.Glob(filepath.Join(os.TempDir(), "rdmactl-bundle-*")); len(tmpAfter) != len(tmpBefore) {
		t.Errorf("unpacked bundles left behind: %v", tmpAfter)
	}
	bad := t.TempDir() + "/bad.tar.gz"
	os.WriteFile(bad, []byte("not a bundle"), 0o644)
	out, stderr, code := runCmd(t, "--sysfs-root", bad, "doctor")
	if code != cmdutil.ExitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not an rdmactl capture bundle") {
		t.Errorf("bad bundle: exit %d, %q, %q", code, out, stderr)
	}
}
