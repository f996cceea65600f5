package dev

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

func TestOpenNetns(t *testing.T) {
	dir := t.TempDir()
	old := netnsRunDir
	netnsRunDir = dir
	t.Cleanup(func() { netnsRunDir = old })
	if err := os.WriteFile(filepath.Join(dir, "blue"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := openNetns("blue")
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	_, err = openNetns("green")
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitNotFound || !strings.Contains(err.Error(), "blue") {
		t.Fatalf("unknown namespace: %v (want exit 3 listing blue)", err)
	}
	if got := netnsNames(); len(got) != 1 || got[0] != "blue" {
		t.Fatalf("netnsNames %v", got)
	}
}

// dev set DEV netns completes the names ip netns add made.
func TestNetnsCompletion(t *testing.T) {
	dir := t.TempDir()
	old := netnsRunDir
	netnsRunDir = dir
	t.Cleanup(func() { netnsRunDir = old })
	os.WriteFile(filepath.Join(dir, "blue"), nil, 0o644)
	out, _, code := cmdtest.Run(t, NewCmd,
		cobra.ShellCompRequestCmd, "--sysfs-root", cmdtest.RxeTree(), "dev", "set", "rxe0", "netns", "")
	if code != 0 || !strings.HasPrefix(out, "blue\n") {
		t.Errorf("completes %q (exit %d), want blue", out, code)
	}
}
