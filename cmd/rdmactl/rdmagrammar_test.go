package main

import (
	"strings"
	"testing"
)

// rdma command lines and the rdmactl command line each becomes.
var rdmaLines = []struct{ rdma, rdmactl string }{
	// dev
	{"dev", "dev show"},
	{"d", "dev show"},
	{"dev show", "dev show"},
	{"dev list", "dev show"},
	{"dev s", "dev show"},
	{"dev l", "dev show"},
	{"dev sh rxe0", "dev show rxe0"},
	{"-j dev show rxe0", "-j dev show rxe0"},
	{"-j -p d", "-j -p dev show"},
	{"-jp dev", "-jp dev show"},
	{"-d dev", "-d dev show"},
	{"dev se rxe0 name rxe9", "dev set rxe0 name rxe9"},
	{"d se rxe0 na rxe9", "dev set rxe0 name rxe9"},
	{"dev set rxe0 n rxe9", "dev set rxe0 name rxe9"}, // name comes before netns
	{"dev set rxe0 ne ns1", "dev set rxe0 netns ns1"},
	{"dev set rxe0 a o", "dev set rxe0 adaptive-moderation on"},
	{"dev set rxe0 adaptive of", "dev set rxe0 adaptive-moderation off"},
	{"dev set rxe0 x y", "dev set rxe0 x y"}, // rdmactl's to refuse
	// link
	{"link", "link"}, // rdmactl's bare link already is link show
	{"l", "link show"},
	{"li", "link show"},
	{"link show", "link show"},
	{"link list rxe0/1", "link show rxe0/1"},
	{"link s rxe0", "link show rxe0"},
	{"link a rxe2 type rxe netdev veth2", "link add rxe2 type rxe netdev veth2"},
	{"link d rxe2", "link delete rxe2"},
	{"link del rxe2", "link del rxe2"},
	// resource
	{"res", "res"},
	{"r", "res"},
	{"resource", "res"},
	{"resource show", "res"},
	{"res show", "res"},
	{"res s", "res"},
	{"res list", "res"},
	{"res show rxe0", "res rxe0"},
	{"res show qp", "res qp"},
	{"r s q", "res qp"},
	{"res show cm_id", "res cm_id"},
	{"res show c", "res cm_id"},
	{"res show cq", "res cq"},
	{"res show mr", "res mr"},
	{"res show pd", "res pd"},
	{"res show ctx", "res ctx"},
	{"res show srq", "res srq"},
	{"res show qp link rxe0/1", "res qp --link=rxe0/1"},
	{"res show qp link rxe0/1 lqpn 5-9", "res qp --link=rxe0/1 --lqpn=5-9"},
	{"res show qp lqpn 1-3,7 state rts type RC", "res qp --lqpn=1-3,7 --state=rts --type=RC"},
	{"res show qp l rxe0 r 0 pi 55 pd 2", "res qp --link=rxe0 --rqpn=0 --pid=55 --pdn=2"},
	{"res show cq dev rxe0 cqn 1-4", "res cq rxe0 --cqn=1-4"},
	{"res show mr dev rxe0 mrn 3", "res mr rxe0 --mrn=3"},
	{"res show pd pdn 1,2 ctxn 0", "res pd --pdn=1,2 --ctxn=0"},
	{"res show ctx ctxn 0-9", "res ctx --ctxn=0-9"},
	{"res show srq srqn 1 lqpn 5", "res srq --srqn=1 --lqpn=5"},
	{"res show cm_id link rxe0/1 state listen", "res cm_id --link=rxe0/1 --state=listen"},
	{"-j res show qp", "-j res qp"},
	// system
	{"system", "system"},
	{"sys", "system"},
	{"s", "system show"},
	{"sy", "system show"},
	{"system show", "system show"},
	{"sys show netns", "system show"},
	{"sys s n", "system show"},
	{"system set netns exclusive", "system set netns exclusive"},
	{"sys set n shared", "system set netns shared"},
	{"sys se p on", "system set privileged-qkey on"},
	// statistic
	{"statistic", "counters --source netlink"},
	{"stat", "counters --source netlink"},
	{"st", "counters --source netlink"},
	{"statistic show", "counters --source netlink"},
	{"stat list", "counters --source netlink"},
	{"stat show link rxe0/1", "counters --source netlink rxe0/1"},
	{"stat s l rxe0", "counters --source netlink rxe0"},
	{"stat show mr", "statistic mr"},
	{"stat qp", "statistic qp show"},
	{"stat q", "statistic qp show"},
	{"stat qp show", "statistic qp show"},
	{"stat qp list", "statistic qp show"},
	{"stat qp show link rxe0/1", "statistic qp show link rxe0/1"},
	{"stat q s link rxe0/1 lqpn 5", "statistic qp show link rxe0/1 lqpn 5"},
	{"stat qp mode", "statistic qp mode"},
	{"stat qp m link rxe0/1", "statistic qp mode link rxe0/1"},
	{"stat qp se link rxe0/1 auto type on", "statistic qp set link rxe0/1 auto type on"},
	{"stat qp b link mlx5_0/1 lqpn 178", "statistic qp bind link mlx5_0/1 lqpn 178"},
	{"stat qp u link mlx5_0/1 cntn 4", "statistic qp unbind link mlx5_0/1 cntn 4"},
	{"stat mode", "statistic mode"},
	{"stat mo", "statistic mode"},
	{"stat mode show", "statistic mode"},
	{"stat mode supported", "statistic mode supported"},
	{"stat mode su link rxe0/1", "statistic mode supported link rxe0/1"},
	{"stat m", "statistic mr"}, // "mr" comes before "mode" in stat.c's table
	{"stat mr", "statistic mr"},
	{"stat set link mlx5_0/1 optional-counters a,b", "statistic set link mlx5_0/1 optional-counters a,b"},
	{"stat u link mlx5_0/1 optional-counters", "statistic unset link mlx5_0/1 optional-counters"},
	// monitor, help
	{"monitor", "monitor"},
	{"m", "monitor"},
	{"h", "help"},
}

func TestTranslateRdma(t *testing.T) {
	for _, c := range rdmaLines {
		got := strings.Join(translateRdma(strings.Fields(c.rdma)), " ")
		for alias, canon := range canonical { // an alias typed stays
			if f := strings.Fields(c.rdma); len(f) > 0 && f[0] == alias {
				got = strings.Replace(got, alias, canon, 1)
			}
		}
		if got != c.rdmactl {
			t.Errorf("rdma %s -> rdmactl %s, want %s", c.rdma, got, c.rdmactl)
		}
	}
}

// rdmactl's own command lines keep their meaning: translateRdma returns
// them unchanged.
func TestTranslateRdmaKeepsRdmactlLines(t *testing.T) {
	for _, l := range []string{
		"",
		"dev show", "dev show rxe0", "dev query rxe0", "dev query --port 1", "dev hca-caps mlx5_0",
		"dev set rxe0 name rxe9", "-j -p dev show rxe0",
		"link show", "link show rxe0/1", "-d -j link show rxe0", "link add rxe2 type rxe netdev veth2", "link delete rxe2",
		"gids", "gids --type v2 --ipv4", "gids rxe0/1",
		"counters", "counters rxe0/1 --nonzero", "counters --watch=2s", "counters rxe0 --source hw_counters",
		"res", "res qp", "res qp rxe0", "-j res qp --pid 1234", "res cq mlx5_0", "res rxe0", "resource qp",
		"res qp --link rxe0/1 --lqpn 5-9", "res qp --qpn 5",
		"perf write -d rxe0 -n 2000", "perf write -d rxe1 10.77.0.1", "perf write --lat",
		"capture dir", "--sysfs-root dir link show", "--sysfs-root=dir gids",
		"monitor", "monitor --poll 1s", "-j monitor --poll 1s",
		"version", "version -d", "completion bash", "help", "help link", "--help", "link --help",
		"system", "system show", "system set netns exclusive", "sys",
		"statistic qp show link rxe0/1", "statistic qp mode", "statistic qp set link rxe0/1 auto type on",
		"statistic qp bind link mlx5_0/1 lqpn 178 cntn 4", "statistic mode supported",
		"statistic set link mlx5_0/1 optional-counters a,b", "statistic unset link mlx5_0/1 optional-counters",
		"statistic mr", "statistic mr dev mlx5_0", "stat qp mode",
		"top", "doctor",
		"frobnicate",
	} {
		args := strings.Fields(l)
		if got := translateRdma(args); strings.Join(got, " ") != l {
			t.Errorf("%q became %q", l, strings.Join(got, " "))
		}
	}
}

// Every rdma line either translates to a command rdmactl has or is
// refused in one line: never a panic.
func TestTranslatedLinesParse(t *testing.T) {
	for _, c := range rdmaLines {
		if c.rdmactl == "help" {
			continue // cobra adds its help command at Execute
		}
		a := &app{stdout: &strings.Builder{}, stderr: &strings.Builder{}}
		root := newRootCmd(a)
		cmd, _, err := root.Find(translateRdma(strings.Fields(c.rdma)))
		if err != nil || cmd == root {
			t.Errorf("rdma %s: rdmactl has no command for %q (%v)", c.rdma, c.rdmactl, err)
		}
	}
}

func FuzzTranslateRdma(f *testing.F) {
	for _, c := range rdmaLines {
		f.Add(c.rdma)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Fields(s)
		out := translateRdma(args)
		if len(args) > 0 && len(out) == 0 {
			t.Fatalf("%q: all words lost", s)
		}
	})
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
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rdmactl: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line", l, code, stderr, exitUsage)
		}
	}
}

func TestRdmaOptionsRefused(t *testing.T) {
	for _, l := range []string{"-o dev", "-b cmds.txt", "-V"} {
		_, stderr, code := runCmd(t, strings.Fields(l)...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "not supported") && !strings.Contains(stderr, "version") {
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
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", l, code, stderr, want)
		}
	}
	// options after the command word are rdmactl's to judge
	for _, l := range []string{"-j dev show", "-dd dev show", "--sysfs-root /x link show", "perf write -d rxe0"} {
		if err := rdmaOptionError(strings.Fields(l)); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
}

// rdmactlTop is every top-level command and alias of rdmactl, no more.
func TestRdmactlTopIsTheCommandTree(t *testing.T) {
	root := newRootCmd(&app{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
	want := map[string]bool{"help": true}
	for _, c := range root.Commands() {
		want[c.Name()] = true
		for _, a := range c.Aliases {
			want[a] = true
		}
	}
	for w := range want {
		if !rdmactlTop[w] {
			t.Errorf("command %q is missing from rdmactlTop", w)
		}
	}
	for w := range rdmactlTop {
		if !want[w] {
			t.Errorf("rdmactlTop has %q, which is no command", w)
		}
	}
}

// "res show NAME" is a device's counts when the device exists, as in rdma.
func TestTranslateResShowDevice(t *testing.T) {
	isC := func(name string) bool { return name == "c" }
	if got := strings.Join(translateRdmaWith([]string{"res", "show", "c"}, isC), " "); got != "res c" {
		t.Errorf("res show c with a device c: %s", got)
	}
	none := func(string) bool { return false }
	if got := strings.Join(translateRdmaWith([]string{"res", "show", "c"}, none), " "); got != "res cm_id" {
		t.Errorf("res show c without a device c: %s", got)
	}
}
