//go:build vmtest

package main

import (
	"bytes"
	"github.com/rdmactl/rdmactl/internal/complete"
	"os"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// TestVMCompletionLive completes against the live /sys of the VM: device
// names as /sys/class/infiniband lists them, and rxe1's IPv4 GID index.
func TestVMCompletionLive(t *testing.T) {
	ents, err := os.ReadDir("/sys/class/infiniband")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range ents {
		want = append(want, e.Name())
	}
	complete := func(args ...string) []string {
		var out bytes.Buffer
		root := newRootCmd(&cmdutil.App{Stdout: &out, Stderr: &out})
		root.AddCommand(&cobra.Command{Use: "vmt DEV/PORT GID", RunE: func(*cobra.Command, []string) error { return nil }})
		complete.Attach(root)
		root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("__complete %q: %v", args, err)
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	var devs []string
	for _, w := range complete("vmt", "") {
		if !strings.Contains(w, "/") {
			devs = append(devs, w)
		}
	}
	if strings.Join(devs, " ") != strings.Join(want, " ") {
		t.Errorf("devices: completion %q, sysfs %q", devs, want)
	}
	gid1, err := os.ReadFile("/sys/class/infiniband/rxe1/ports/1/gids/1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range complete("vmt", "rxe1/1", "") {
		if strings.HasPrefix(l, "1\t"+strings.TrimSpace(string(gid1))) {
			found = true
		}
	}
	if !found {
		t.Errorf("GID index 1 of rxe1/1 (%s) not offered: %q", strings.TrimSpace(string(gid1)), complete("vmt", "rxe1/1", ""))
	}
}
