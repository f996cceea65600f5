package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/gendocs"
)

// make docs runs this test with -update-docs to rewrite completions/ and
// man/ from the command tree; without it the test fails when they are stale.
var updateDocs = flag.Bool("update-docs", false, "rewrite completions/ and man/ (make docs)")

// repoRoot is where completions/ and man/ live, seen from this package.
const repoRoot = "../.."

// exitStatusSection documents the exit codes on every man page, from the
// same constants main uses.
func exitStatusSection() gendocs.Section {
	rows := []struct {
		code int
		text string
	}{
		{cmdutil.ExitOK, "success"},
		{cmdutil.ExitFailure, "any failure not listed below"},
		{cmdutil.ExitUsage, "bad flags or arguments"},
		{cmdutil.ExitNotFound, "unknown device, port, GID index or resource"},
		{cmdutil.ExitPermission, "permission denied (EACCES/EPERM), or RLIMIT_MEMLOCK too low"},
		{cmdutil.ExitUnsupported, "the kernel or the device lacks the feature"},
		{cmdutil.ExitPeer, "benchmark peer unreachable, vanished or garbled, or the run's port went down"},
		{cmdutil.ExitPerfThreshold, "a perf result missed a threshold (-w, -y, --limit_lat)"},
		{cmdutil.ExitDoctorFail, "doctor found a FAIL"},
		{cmdutil.ExitInterrupted, "perf interrupted (SIGINT/SIGTERM): the run has no result. top, monitor, the exporter and counters --watch " +
			"end on these signals with 0; a one-shot inspection command is ended by the signal itself, as rdma is (a shell shows 130 for ^C)"},
	}
	s := gendocs.Section{Title: "Exit status"}
	for _, r := range rows {
		s.Rows = append(s.Rows, gendocs.Row{Tag: fmt.Sprint(r.code), Text: r.text})
	}
	return s
}

func generateDocs(t *testing.T) map[string][]byte {
	t.Helper()
	a := &cmdutil.App{Stdout: io.Discard, Stderr: io.Discard}
	root := newRootCmd(a)
	a.ExpandHelp()
	files, err := gendocs.Generate(root, gendocs.Options{
		Manual:      "rdmactl Manual",
		Source:      "rdmactl",
		AllSections: []gendocs.Section{exitStatusSection()},
		RootSections: []gendocs.Section{
			{Title: "Environment", Rows: []gendocs.Row{{Text: "rdmactl reads no environment variables but NO_COLOR " +
				"(set and not empty: top shows no colors; TERM=dumb too). Use --sysfs-root to read a captured copy of /sys."}}},
			{Title: "JSON output", Rows: []gendocs.Row{{Text: "With -j every command prints one JSON document " +
				"(indented with -p). Keys are stable snake_case; where rdma -j shows the same fact the key is " +
				"its name with hyphens turned into underscores. Numbers are JSON numbers, never hex strings; " +
				"GUIDs are \"xxxx:xxxx:xxxx:xxxx\" strings. A fact the kernel does not provide is left out."}}},
			{Title: "Files", Rows: []gendocs.Row{
				{Tag: "/sys/class/infiniband", Text: "device, port, GID and counter attributes"},
				{Tag: "/dev/infiniband/uverbsN", Text: "the verbs interface (dev query, perf)"},
			}},
			{Title: "Reference tools", Rows: []gendocs.Row{{Text: "rdmactl replaces rdma(8) dev/link/res/statistic, " +
				"ibv_devices(1), ibv_devinfo(1), ibstat(8), show_gids(8) and perftest's ib_send_bw(1), " +
				"ib_write_bw(1), ib_read_bw(1) and their _lat variants, with which perf is wire-compatible."}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestDocsUpToDate(t *testing.T) {
	files := generateDocs(t)
	if *updateDocs {
		if err := gendocs.Write(repoRoot, files); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d files under completions/ and man/", len(files))
		return
	}
	if diffs := gendocs.Check(repoRoot, files); len(diffs) > 0 {
		t.Fatalf("completions/ or man/ are stale: run make docs (and commit the result)\n  %s",
			strings.Join(diffs, "\n  "))
	}
}

// TestDocsDeterministic guards against output that changes from run to run
// (map order, dates), which would make TestDocsUpToDate flaky.
func TestDocsDeterministic(t *testing.T) {
	a, b := generateDocs(t), generateDocs(t)
	for p, content := range a {
		if string(b[p]) != string(content) {
			t.Fatalf("%s differs between two generations", p)
		}
		for _, bad := range []string{"/work/", "/home/", "/root/", "/tmp/"} {
			if strings.Contains(string(content), bad) {
				t.Errorf("%s contains an absolute path (%s)", p, bad)
			}
		}
	}
	if _, ok := a["man/rdmactl.1"]; !ok {
		t.Fatal("no man/rdmactl.1")
	}
	if _, ok := a["man/rdmactl-completion-bash.1"]; !ok {
		t.Fatal("no page for rdmactl completion bash")
	}
}
