package main

import (
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// TestNeedsDeclared: what each command needs of the host, as declared. A
// new command that reads NLDEV resources or uverbs, or writes, belongs
// here; one missing from this table fails.
func TestNeedsDeclared(t *testing.T) {
	want := map[string]cmdutil.Need{
		"dev query":           cmdutil.NeedUverbs,
		"dev hca-caps":        cmdutil.NeedUverbs,
		"dev set":             cmdutil.NeedNetAdmin,
		"link add":            cmdutil.NeedNetAdmin,
		"link delete":         cmdutil.NeedNetAdmin,
		"res":                 cmdutil.NeedNetlink,
		"system":              cmdutil.NeedNetlink,
		"system show":         cmdutil.NeedNetlink,
		"system set":          cmdutil.NeedNetAdmin,
		"statistic qp":        cmdutil.NeedNetlink,
		"statistic qp show":   cmdutil.NeedNetlink,
		"statistic qp mode":   cmdutil.NeedNetlink,
		"statistic qp set":    cmdutil.NeedNetAdmin,
		"statistic qp bind":   cmdutil.NeedNetAdmin,
		"statistic qp unbind": cmdutil.NeedNetAdmin,
		"statistic mode":      cmdutil.NeedNetlink,
		"statistic set":       cmdutil.NeedNetAdmin,
		"statistic unset":     cmdutil.NeedNetAdmin,
		"statistic mr":        cmdutil.NeedNetlink,
	}
	got := map[string]cmdutil.Need{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if n := cmdutil.NeedsOf(c); n != 0 {
			got[strings.TrimPrefix(c.CommandPath(), "rdmactl ")] = n
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(&cmdutil.App{Stdout: io.Discard, Stderr: io.Discard}))
	var bad []string
	for k, v := range want {
		if got[k] != v {
			bad = append(bad, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("needs differ for %v: got %v", bad, got)
	}
}

// TestNeedsRefuseCapturedTree: every command that needs the running kernel
// refuses a captured tree before it reads its arguments, in one line with
// exit 5, whatever it is.
func TestNeedsRefuseCapturedTree(t *testing.T) {
	for _, args := range [][]string{
		{"res"}, {"res", "qp", "rxe0"}, {"-r", "res", "qp"}, {"res", "show", "cm_id", "dev", "rxe0"},
		{"dev", "query"}, {"dev", "query", "rxe0/1"}, {"dev", "query", "--hca-caps"}, {"dev", "hca-caps"},
		{"system"}, {"system", "show"}, {"statistic", "mode"}, {"statistic", "qp"}, {"statistic", "mr"},
		{"stat", "qp", "mode", "link", "rxe0/1"},
		{"system", "set", "netns", "shared"}, {"dev", "set", "rxe0", "name", "x"},
		{"link", "add", "x", "type", "rxe", "netdev", "nosuch"}, {"link", "delete", "rxe0"},
		{"statistic", "qp", "set", "link", "rxe0/1", "auto", "off"},
		{"statistic", "unset", "link", "rxe0/1", "optional-counters"},
	} {
		out, stderr, code := runCmd(t, append([]string{"--sysfs-root", rxeFixture}, args...)...)
		if code != cmdutil.ExitUnsupported || out != "" || strings.Count(stderr, "\n") != 1 ||
			!strings.Contains(stderr, "needs the running kernel") || !strings.Contains(stderr, "--sysfs-root") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and one line", args, code, out, stderr, cmdutil.ExitUnsupported)
		}
	}
}
