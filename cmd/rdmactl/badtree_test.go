package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// TestBadEntriesSkipped: on a capture with a dangling device link, a stray
// file among the devices and a port directory 0, every listing command
// prints the good devices and exits 0, each bad entry named once on
// stderr as a warning; a device or port that is listed is also found.
func TestBadEntriesSkipped(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("../../internal/sysfs/testdata/mlx5")); err != nil {
		t.Fatal(err)
	}
	ib := filepath.Join(root, "class", "infiniband")
	for _, err := range []error{
		os.Symlink("../../nowhere", filepath.Join(ib, "mlx5_2")),
		os.WriteFile(filepath.Join(ib, "mlx5_3"), []byte("x\n"), 0o644),
		os.Mkdir(filepath.Join(ib, "mlx5_0", "ports", "0"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"link", "show"}, {"-d", "dev", "show"}, {"gids"}, {"counters"}, {"-j", "link", "show"},
		{"doctor"}, {"exporter", "--once"}, {"top", "-b", "-n", "1"},
	} {
		out, stderr, code := runCmd(t, append([]string{"--sysfs-root", root}, args...)...)
		if args[0] == "doctor" && code == cmdutil.ExitDoctorFail {
			code = 0 // a verdict on the capture, not an error
		}
		if code != 0 || !strings.Contains(out, "mlx5_1") {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", args, code, stderr, out)
			continue
		}
		for _, bad := range []string{"mlx5_2", "mlx5_3", "ports/0"} {
			if n := strings.Count(stderr, bad+": not a"); n != 1 {
				t.Errorf("%v: %s warned %d times in %q", args, bad, n, stderr)
			}
		}
		if strings.Contains(out, "mlx5_2") || strings.Contains(out, "mlx5_0/0") {
			t.Errorf("%v: a skipped entry printed:\n%s", args, out)
		}
	}
}
