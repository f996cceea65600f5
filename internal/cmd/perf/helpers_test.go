package perf

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// runCmd runs args against a root holding this package's command.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return cmdtest.Run(t, []func(*cmdutil.App) *cobra.Command{NewCmd}, args...)
}
