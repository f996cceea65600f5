package main

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/rdmagrammar"
)

// grammarLines reads rdmagrammar's table of rdma command lines and the
// rdmactl lines they become ("RDMA -> RDMACTL", # comments).
func grammarLines(t *testing.T) []struct{ rdma, rdmactl string } {
	t.Helper()
	f, err := os.Open("../../internal/rdmagrammar/testdata/lines.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ls []struct{ rdma, rdmactl string }
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, _, _ := strings.Cut(sc.Text(), "#")
		if a, b, ok := strings.Cut(l, "->"); ok {
			ls = append(ls, struct{ rdma, rdmactl string }{strings.TrimSpace(a), strings.TrimSpace(b)})
		}
	}
	if len(ls) == 0 {
		t.Fatal("no lines in rdmagrammar's testdata/lines.txt")
	}
	return ls
}

// noDevice: no RDMA device has the name (as on a host without RDMA).
func noDevice(string) bool { return false }

// Every rdma line either translates to a command rdmactl has or is
// refused in one line: never a panic.
func TestTranslatedLinesParse(t *testing.T) {
	for _, c := range grammarLines(t) {
		if c.rdmactl == "help" {
			continue // cobra adds its help command at Execute
		}
		a := &cmdutil.App{Stdout: &strings.Builder{}, Stderr: &strings.Builder{}}
		root := newRootCmd(a)
		cmd, _, err := root.Find(rdmagrammar.Translate(strings.Fields(c.rdma), noDevice))
		if err != nil || cmd == root {
			t.Errorf("rdma %s: rdmactl has no command for %q (%v)", c.rdma, c.rdmactl, err)
		}
	}
}

// Filters rdmactl refuses before asking the kernel: one line, exit 2.
func TestResFilterBadInput(t *testing.T) {
	for _, l := range []string{
		"res show qp lqpn",          // a key without its value
		"res show qp lqpn x",        // not a number
		"res show qp lqpn 9-5",      // backwards
		"res show qp frobn 3",       // no such filter
		"res show cq lqpn 3",        // not a cq filter (rdma's table)
		"res show qp link rxe0/x",   // bad port
		"res qp --cqn 1",            // flags: same tables
		"res --lqpn 3",              // no object
		"res qp --state ''",         // empty names
		"res qp rxe0 --link rxe1/1", // two devices
	} {
		args := strings.Fields(strings.ReplaceAll(l, "''", "\x00"))
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "\x00", "")
		}
		_, stderr, code := runCmd(t, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rdmactl: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line", l, code, stderr, cmdutil.ExitUsage)
		}
	}
}

func TestRdmaOptionsRefused(t *testing.T) {
	for _, l := range []string{"-o dev", "-b cmds.txt", "-V"} {
		_, stderr, code := runCmd(t, strings.Fields(l)...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not supported") && !strings.Contains(stderr, "version") {
			t.Errorf("%s: exit %d, stderr %q", l, code, stderr)
		}
	}
	// -r is rdma's raw dump: res qp, cq, mr, srq only, and without filters
	// other than the device and link.
	for l, want := range map[string]string{
		"-r dev":                  "applies to res",
		"--raw link":              "applies to res",
		"--sysfs-root /x -r link": "applies to res",
		"-jr res":                 "needs an object",
		"-r res show pd":          "qp, cq, mr and srq only",
		"-r res show qp lqpn 3":   "no fields to filter on",
		"res cq -r --users 1":     "no fields to filter on",
	} {
		_, stderr, code := runCmd(t, strings.Fields(l)...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", l, code, stderr, want)
		}
	}
}

// rdmagrammar's own words are every top-level command and alias of
// rdmactl, no more.
func TestGrammarOwnWordsAreTheCommandTree(t *testing.T) {
	root := newRootCmd(&cmdutil.App{Stdout: &strings.Builder{}, Stderr: &strings.Builder{}})
	want := map[string]bool{"help": true}
	for _, c := range root.Commands() {
		want[c.Name()] = true
		for _, a := range c.Aliases {
			want[a] = true
		}
	}
	own := map[string]bool{}
	for _, w := range rdmagrammar.OwnWords() {
		own[w] = true
		if !want[w] {
			t.Errorf("rdmagrammar's own words have %q, which is no command", w)
		}
	}
	for w := range want {
		if !own[w] {
			t.Errorf("command %q is missing from rdmagrammar's own words (rdmactlTop)", w)
		}
	}
}
