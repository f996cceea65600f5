package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// TestCaptureFixtureRoundTrip: 'rdmactl capture' of each fixture tree
// prints nothing, and every offline command shows the same on the copy as
// on the tree, table and JSON.
func TestCaptureFixtureRoundTrip(t *testing.T) {
	cmds := [][]string{
		{"link", "show"}, {"-d", "link", "show"}, {"dev", "show"}, {"-d", "dev", "show"},
		{"gids"}, {"gids", "--all"}, {"counters"}, {"counters", "--source", "hw_counters"},
	}
	for _, tree := range []string{rxeTree, mlx5Tree} {
		dst := filepath.Join(t.TempDir(), "cap")
		out, stderr, code := runCmd(t, "--sysfs-root", tree, "capture", dst)
		if code != 0 || out != "" || stderr != "" {
			t.Fatalf("capture %s: exit %d, %q, %q; want 0 and no output", tree, code, out, stderr)
		}
		for _, c := range cmds {
			for _, j := range [][]string{nil, {"-j"}} {
				args := append(append([]string{}, j...), c...)
				want, wantErr, wantCode := runCmd(t, append([]string{"--sysfs-root", tree}, args...)...)
				got, gotErr, gotCode := runCmd(t, append([]string{"--sysfs-root", dst}, args...)...)
				if wantCode != 0 || want == "" {
					t.Fatalf("%s %v: exit %d, %q: the fixture must answer", tree, args, wantCode, wantErr)
				}
				if got != want || gotErr != wantErr || gotCode != wantCode {
					t.Errorf("%s %v: the capture shows\n%s%s(exit %d)\nthe tree\n%s%s(exit %d)", tree, args,
						got, gotErr, gotCode, want, wantErr, wantCode)
				}
			}
		}
	}
}

func TestCaptureErrors(t *testing.T) {
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"capture"}, cmdutil.ExitUsage, "one argument"},
		{[]string{"capture", "a", "b"}, cmdutil.ExitUsage, "one argument"},
		{[]string{"--sysfs-root", rxeTree, "capture", full}, cmdutil.ExitUsage, "not empty"},
		{[]string{"--sysfs-root", t.TempDir(), "capture", filepath.Join(t.TempDir(), "c")}, cmdutil.ExitUnsupported, "no RDMA"},
	} {
		out, stderr, code := runCmd(t, tc.args...)
		if code != tc.code || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", tc.args, code, out, stderr, tc.code, tc.want)
		}
	}
}
