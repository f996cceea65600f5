// Package cmdtest runs commands in-process for their packages' tests: a
// root with the global flags and the commands under test, as the binary
// has them.
package cmdtest

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/cmd/root"
	"github.com/spf13/cobra"
)

// Run runs args against a root holding the one command cmd makes (a
// package's NewCmd) and returns what it printed and its exit code.
func Run(t testing.TB, cmd func(*cmdutil.App) *cobra.Command, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e strings.Builder
	code = root.Run(&cmdutil.App{Stdout: &o, Stderr: &e, Ctx: context.Background()}, []func(*cmdutil.App) *cobra.Command{cmd}, args)
	return o.String(), e.String(), code
}

// RxeTree is the captured sysfs tree of two rxe devices
// (internal/sysfs/testdata/rxe), for --sysfs-root.
func RxeTree() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..", "sysfs", "testdata", "rxe")
}
