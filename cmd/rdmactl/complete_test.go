package main

import (
	"bytes"
	cpl "github.com/rdmactl/rdmactl/internal/complete"
	"io"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// rxeFixture is a captured /sys of the VM (rxe0, rxe1), owned by sysfs.
const rxeFixture = "../../internal/sysfs/testdata/rxe"

// completeWith runs cobra's hidden __complete command on a root with test
// commands attached the way cpl.Attach does it, and returns the
// offered words (descriptions cut off) and the directive line.
func completeWith(t *testing.T, args ...string) (words []string, directive string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &cmdutil.App{Stdout: &out, Stderr: &errb}
	root := newRootCmd(a)
	noop := func(*cobra.Command, []string) error { return nil }
	root.AddCommand(
		&cobra.Command{Use: "tshow [DEV[/PORT]]", RunE: noop},
		&cobra.Command{Use: "tdev DEV", RunE: noop},
		&cobra.Command{Use: "tgid DEV/PORT GID", RunE: noop},
	)
	flagged := &cobra.Command{Use: "tflag", RunE: noop}
	flagged.Flags().String("ib-dev", "", "")
	flagged.Flags().Int("gid-index", 0, "")
	root.AddCommand(flagged)
	cpl.Attach(root)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd, "--sysfs-root", rxeFixture}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %v: %v (stderr %s)", args, err, errb.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, lines[len(lines)-1]
}

func TestCompleteDevPorts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tshow", ""}, "rxe0 rxe0/1 rxe1 rxe1/1"},
		{[]string{"tshow", "rxe1"}, "rxe1 rxe1/1"},
		{[]string{"tshow", "rxe0/"}, "rxe0/1"},
		{[]string{"tshow", "mlx"}, ""},
		{[]string{"tdev", ""}, "rxe0 rxe1"},
		{[]string{"tflag", "--ib-dev", ""}, "rxe0 rxe1"},
	} {
		words, dir := completeWith(t, tc.args...)
		if got := strings.Join(words, " "); got != tc.want {
			t.Errorf("complete %q: got %q, want %q", tc.args, got, tc.want)
		}
		if dir != ":4" { // ShellCompDirectiveNoFileComp
			t.Errorf("complete %q: directive %s, want :4 (no file completion)", tc.args, dir)
		}
	}
}

func TestCompleteGIDIndexes(t *testing.T) {
	// rxe1/1 in the fixture: index 0 is fe80::, 1 is ::ffff:10.77.0.2, and
	// index 2 (the IPv6 link-local RoCE v2 twin) in newer kernels.
	words, _ := completeWith(t, "tgid", "rxe1/1", "")
	if len(words) < 2 || words[0] != "0" || words[1] != "1" {
		t.Fatalf("GID indexes of rxe1/1: %q", words)
	}
	words, _ = completeWith(t, "tflag", "--ib-dev", "rxe0", "--gid-index", "")
	if len(words) < 2 {
		t.Fatalf("--gid-index with --ib-dev rxe0: %q", words)
	}
	if words, _ := completeWith(t, "tgid", "nosuchdev", ""); len(words) != 0 {
		t.Fatalf("unknown device: %q", words)
	}
}

func TestArgCompletionFromUse(t *testing.T) {
	for _, tc := range []struct {
		use  string
		args []string
		want string
	}{
		{"show [DEV[/PORT]]", nil, "rxe0 rxe0/1 rxe1 rxe1/1"},
		{"show [DEV[/PORT]]", []string{"rxe0"}, ""}, // one slot only
		{"query DEVICE...", []string{"rxe0"}, "rxe0 rxe1"},
		{"gids [DEV] [GID_INDEX]", []string{"rxe1"}, "0 1"},
		{"write [SERVER] [DEV]", nil, "rxe0 rxe1"}, // SERVER may be left out
		{"write SERVER [DEV]", nil, ""},
		{"write [SERVER] [DEV]", []string{"10.77.0.1"}, "rxe0 rxe1"},
		// alternatives, and an optional slot lets the next one complete too
		{"res [qp|cq|mr] [DEV]", nil, "qp cq mr rxe0 rxe1"},
		{"res [qp|cq|mr] [DEV]", []string{"qp"}, "rxe0 rxe1"},
		{"res qp|cq DEV", nil, "qp cq"},
	} {
		f := cpl.ForUsage(tc.use)
		if f == nil {
			t.Errorf("cpl.ForUsage(%q) = nil", tc.use)
			continue
		}
		c := &cobra.Command{}
		c.Flags().String("sysfs-root", rxeFixture, "")
		words, _ := f(c, tc.args, "")
		var got []string
		for _, w := range words {
			w, _, _ = strings.Cut(w, "\t")
			got = append(got, w)
		}
		// Only the first two GID indexes are certain in any kernel version.
		if tc.want == "0 1" && len(got) > 2 {
			got = got[:2]
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%q args %q: got %q, want %q", tc.use, tc.args, got, tc.want)
		}
	}
	for _, use := range []string{"write [SERVER]", "DEV", "res [qp|cq|mr|pd] [DEVX]", "completion bash|zsh|fish|powershell"} {
		if cpl.ForUsage(use) != nil {
			t.Errorf("cpl.ForUsage(%q) should be nil", use)
		}
	}
}

func TestCompletionCommand(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__rdmactl_get_completion_results",
		"zsh":        "#compdef rdmactl",
		"fish":       "complete -c rdmactl",
		"powershell": "Register-ArgumentCompleter",
	} {
		out, stderr, code := runCmd(t, "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Errorf("completion %s: code %d, stderr %q, no %q in output", shell, code, stderr, marker)
		}
	}
	_, stderr, code := runCmd(t, "completion")
	if code != cmdutil.ExitUsage || !strings.Contains(stderr, "bash, zsh, fish or powershell") {
		t.Errorf("bare completion: code %d stderr %q", code, stderr)
	}
	_, _, code = runCmd(t, "completion", "tcsh")
	if code != cmdutil.ExitUsage {
		t.Errorf("completion tcsh: code %d, want %d", code, cmdutil.ExitUsage)
	}
}

// completeWords asks the whole command tree, with the completions the
// binary attaches at start-up, to complete args on the captured rxe tree
// (cobra's __complete), and returns the words it offers.
func completeWords(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	root := newRootCmd(&cmdutil.App{Stdout: &out, Stderr: &out})
	cpl.Attach(root)
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd, "--sysfs-root", rxeFixture}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("__complete %q: %v", args, err)
	}
	var words []string
	for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
			w, _, _ := strings.Cut(l, "\t")
			words = append(words, w)
		}
	}
	return words
}

// TestAttachCompletionsRealTree completes on the real command tree, as the
// shell would once run attaches the completions: every command whose
// usage names a DEV slot completes device names, and perf's --ib-dev and
// --gid-index flags complete too.
func TestAttachCompletionsRealTree(t *testing.T) {
	complete := func(args ...string) []string { return completeWords(t, args...) }
	root := newRootCmd(&cmdutil.App{Stdout: io.Discard, Stderr: io.Discard})
	n := 0
	walk(root, func(c *cobra.Command) {
		if c == root || cpl.ForUsage(c.Use) == nil || keywordUsage(c.Use) {
			return
		}
		path := strings.Fields(c.CommandPath())[1:]
		got := complete(append(path, "rxe")...)
		if len(got) == 0 || got[0] != "rxe0" {
			t.Errorf("%s (%q): completes %q, want rxe0 first", c.CommandPath(), c.Use, got)
		}
		n++
	})
	t.Logf("%d commands complete devices", n)
	// perf parses perftest's flags itself (DisableFlagParsing): its values
	// complete through completeRawFlags.
	for _, c := range root.Commands() {
		if c.Name() != "perf" {
			continue
		}
		for _, sub := range c.Commands() {
			if !sub.DisableFlagParsing {
				continue // perf mesh: cobra's own flags, none of perftest's
			}
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"-d", ""}, "rxe0 rxe1"},
				{[]string{"--ib-dev=rxe"}, "--ib-dev=rxe0 --ib-dev=rxe1"},
				{[]string{"-d", "rxe1", "-x", ""}, "0 1"},
				{[]string{"-i", "1", "--ib-dev=rxe1", "--gid-index="}, "--gid-index=0 --gid-index=1"},
				{[]string{"-s", ""}, ""},
			} {
				got := complete(append([]string{"perf", sub.Name()}, tc.args...)...)
				if len(got) > 2 {
					got = got[:2] // GID index 2+ depends on the kernel
				}
				if strings.Join(got, " ") != tc.want {
					t.Errorf("perf %s %q: %q, want %q", sub.Name(), tc.args, got, tc.want)
				}
			}
		}
	}
}

// TestEveryDevCommandCompletes builds the tree as main does for the
// shell's completion request and checks that every command whose usage has
// a DEV slot got completion, then completes through run itself.
func TestEveryDevCommandCompletes(t *testing.T) {
	root := newRootCmd(&cmdutil.App{Stdout: io.Discard, Stderr: io.Discard})
	cpl.Attach(root)
	walk(root, func(c *cobra.Command) {
		if cpl.ForUsage(c.Use) != nil && c.ValidArgsFunction == nil {
			t.Errorf("%s (%q) has no completion: is it built outside newRootCmd's tree?", c.CommandPath(), c.Use)
		}
	})
	out, _, code := runCmd(t, "--sysfs-root", rxeFixture, cobra.ShellCompRequestCmd, "gids", "rxe1")
	if code != 0 || !strings.HasPrefix(out, "rxe1\nrxe1/1\n") {
		t.Errorf("rdmactl __complete gids rxe1: code %d, %q", code, out)
	}
}

// keywordUsage: the usage starts with a literal keyword of rdma's grammar
// ("link DEV/PORT ...", "[show] [link DEV]"): such commands complete the
// keyword first (TestKeywordCompletion), not a device.
func keywordUsage(use string) bool {
	f := strings.Fields(use)
	if len(f) < 2 {
		return false
	}
	w := strings.Trim(f[1], "[]")
	return w != "" && strings.ToLower(w) == w && !strings.Contains(w, "|")
}

// cpl.Requested tells the shell's completion requests, wherever the global
// flags put the hidden command, from every other run.
func TestCompleting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{cobra.ShellCompRequestCmd, "link", "show", ""}, true},
		{[]string{"--sysfs-root", "x", cobra.ShellCompNoDescRequestCmd, "gids", "rxe"}, true},
		{[]string{"link", "show"}, false},
		{[]string{"completion", "bash"}, false},
		{nil, false},
	} {
		if got := cpl.Requested(tc.args); got != tc.want {
			t.Errorf("cpl.Requested(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// walk calls f on c and every command below it.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, s := range c.Commands() {
		walk(s, f)
	}
}
