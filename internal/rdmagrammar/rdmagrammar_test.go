package rdmagrammar

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// rdmaLine is an rdma command line and the rdmactl command line it becomes.
type rdmaLine struct{ rdma, rdmactl string }

// readLines reads testdata/lines.txt ("RDMA -> RDMACTL", # comments).
func readLines(t testing.TB) []rdmaLine {
	t.Helper()
	f, err := os.Open("testdata/lines.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ls []rdmaLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(l) == "" {
			continue
		}
		a, b, ok := strings.Cut(l, "->")
		if !ok {
			t.Fatalf("testdata/lines.txt: %q has no ->", l)
		}
		ls = append(ls, rdmaLine{strings.TrimSpace(a), strings.TrimSpace(b)})
	}
	return ls
}

// noDevice: no RDMA device has the name (as on a host without RDMA).
func noDevice(string) bool { return false }

func TestTranslate(t *testing.T) {
	for _, c := range readLines(t) {
		got := strings.Join(Translate(strings.Fields(c.rdma), noDevice), " ")
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

// rdmactl's own command lines keep their meaning: Translate returns
// them unchanged.
func TestKeepsRdmactlLines(t *testing.T) {
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
		if got := Translate(args, noDevice); strings.Join(got, " ") != l {
			t.Errorf("%q became %q", l, strings.Join(got, " "))
		}
	}
}

func FuzzTranslate(f *testing.F) {
	for _, c := range readLines(f) {
		f.Add(c.rdma)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Fields(s)
		out := Translate(args, noDevice)
		if len(args) > 0 && len(out) == 0 {
			t.Fatalf("%q: all words lost", s)
		}
	})
}

// "res show NAME" is a device's counts when the device exists, as in rdma.
func TestResShowDevice(t *testing.T) {
	isC := func(name string) bool { return name == "c" }
	if got := strings.Join(Translate([]string{"res", "show", "c"}, isC), " "); got != "res c" {
		t.Errorf("res show c with a device c: %s", got)
	}
	none := func(string) bool { return false }
	if got := strings.Join(Translate([]string{"res", "show", "c"}, none), " "); got != "res cm_id" {
		t.Errorf("res show c without a device c: %s", got)
	}
}

// Options after the command word are rdmactl's to judge.
func TestOptionErrorLeadingOnly(t *testing.T) {
	for _, l := range []string{"-j dev show", "-dd dev show", "--sysfs-root /x link show", "perf write -d rxe0", "dev -o"} {
		if err := OptionError(strings.Fields(l)); err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	for _, l := range []string{"-o dev", "-jb x", "--batch x", "-V"} {
		if err := OptionError(strings.Fields(l)); err == nil {
			t.Errorf("%s: accepted", l)
		}
	}
}
