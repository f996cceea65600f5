package main

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

func TestDevQueryArgs(t *testing.T) {
	for _, args := range [][]string{
		{"dev", "query", "rxe0/x"},
		{"dev", "query", "rxe0/0"},
		{"dev", "query", "rxe0/1", "--port", "2"},
		{"dev", "query", "--port", "300"},
		{"dev", "query", "a", "b"},
	} {
		_, stderr, code := runCmd(t, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: code %d stderr %q", args, code, stderr)
		}
	}
	_, stderr, code := runCmd(t, "--sysfs-root", t.TempDir(), "dev", "query")
	if code != cmdutil.ExitUnsupported || !strings.Contains(stderr, "sysfs-root") {
		t.Errorf("--sysfs-root: code %d stderr %q", code, stderr)
	}
}
