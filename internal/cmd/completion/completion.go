package completion

import (
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// NewCmd replaces cobra's default `completion` command with one
// that has examples and says where each shell wants the script.
func NewCmd(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or PowerShell",
		Long: `Print the shell completion script for bash, zsh, fish or PowerShell.

Completion knows rdmactl's commands and flags, and also the RDMA devices,
ports and GID indexes of the running system (or of --sysfs-root). The
release archives ship the same scripts in completions/.`,
		Example: `  # bash, this shell only (needs the bash-completion package):
  source <(rdmactl completion bash)
  # bash, for every session:
  rdmactl completion bash | sudo tee /usr/share/bash-completion/completions/rdmactl
  # zsh ("autoload -U compinit; compinit" in ~/.zshrc):
  rdmactl completion zsh > "${fpath[1]}/_rdmactl"
  # fish:
  rdmactl completion fish > ~/.config/fish/completions/rdmactl.fish
  # PowerShell:
  rdmactl completion powershell | Out-String | Invoke-Expression`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cmdutil.UsageErrorf("'rdmactl completion' needs a shell: bash, zsh, fish or powershell")
		},
	}
	shells := []struct {
		name, short, example string
		gen                  func(root *cobra.Command, c *cobra.Command) error
	}{
		{"bash", "Print the bash completion script", "  source <(rdmactl completion bash)",
			func(root, c *cobra.Command) error { return root.GenBashCompletionV2(c.OutOrStdout(), true) }},
		{"zsh", "Print the zsh completion script", `  rdmactl completion zsh > "${fpath[1]}/_rdmactl"`,
			func(root, c *cobra.Command) error { return root.GenZshCompletion(c.OutOrStdout()) }},
		{"fish", "Print the fish completion script", "  rdmactl completion fish > ~/.config/fish/completions/rdmactl.fish",
			func(root, c *cobra.Command) error { return root.GenFishCompletion(c.OutOrStdout(), true) }},
		{"powershell", "Print the PowerShell completion script", "  rdmactl completion powershell | Out-String | Invoke-Expression",
			func(root, c *cobra.Command) error { return root.GenPowerShellCompletionWithDesc(c.OutOrStdout()) }},
	}
	for _, s := range shells {
		gen := s.gen
		cmd.AddCommand(&cobra.Command{
			Use:               s.name,
			Short:             s.short,
			Example:           s.example,
			Args:              cobra.NoArgs,
			ValidArgsFunction: cobra.NoFileCompletions,
			RunE: func(c *cobra.Command, args []string) error {
				c.SetOut(a.Stdout)
				return gen(c.Root(), c)
			},
		})
	}
	return cmd
}
