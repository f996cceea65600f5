package main

import (
	"context"
	"io"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/cmd/root"
	"github.com/spf13/cobra"
)

// run executes rdmactl in this process with args and returns its exit
// code, as the binary would.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runApp(&cmdutil.App{Stdout: stdout, Stderr: stderr, Ctx: ctx}, args)
}

// runApp is run with the app given: its writers, context and SoleSession.
func runApp(a *cmdutil.App, args []string) int { return root.Run(a, commands, args) }

// newRootCmd is rdmactl's command tree over a.
func newRootCmd(a *cmdutil.App) *cobra.Command { return root.New(a, commands) }
