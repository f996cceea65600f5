//go:build vmtest

package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// TestVMOutputsUnchanged runs every read-only command line of outputLines
// with this tree's rdmactl and with rdmactl as of the commit named in
// testdata/outputs-base, one after the other on the same devices, and
// wants the same stdout, stderr and exit code to the byte: on the VM's two
// devices, on sixteen, and on the captured rxe and mlx5 trees. A
// restructuring must not change what users and their scripts read.
//
// Resources are held while it runs (an SRQ ping-pong server and an RDMA CM
// listener), so that res prints objects of every kind but MR counters. A
// line that differs is run again, both binaries, once: counters may move
// between two runs; a real difference stays.
func TestVMOutputsUnchanged(t *testing.T) {
	bin := rdmactlBin(t)
	base := os.Getenv("RDMACTL_BASE_BIN")
	if base == "" {
		t.Fatal("RDMACTL_BASE_BIN is not set: vm/vmtest builds rdmactl at testdata/outputs-base's commit and suite.sh sets it")
	}
	allow := outputsAllowed(t)
	holdResources(t)
	// A port in auto mode, so that statistic's mode views show one.
	sh(t, "rdma", "statistic", "qp", "set", "link", "rxe0/1", "auto", "type", "on")
	t.Cleanup(func() { quiet(t, "rdma", "statistic", "qp", "set", "link", "rxe0/1", "auto", "off") })

	compare := func(t *testing.T, prefix []string, lines []outputLine) {
		t.Helper()
		var all [][]string
		for _, l := range lines {
			for _, g := range outputVariants(l) {
				if !allowed(allow, prefix != nil, l.args) {
					all = append(all, append(append(append([]string{}, prefix...), g...), l.args...))
				}
			}
		}
		diffs, again := readOnlyDiffs(len(all), func(i int) string { return outputDiff(base, bin, all[i]) })
		bad := 0
		for i, d := range diffs {
			if d != "" {
				bad++
				t.Errorf("rdmactl %s: %s", strings.Join(all[i], " "), d)
			}
		}
		t.Logf("%d command lines, %d differ (%d run again alone)", len(all), bad, again)
	}

	t.Run("2_devices", func(t *testing.T) {
		compare(t, nil, outputLines("rxe0", "rxe1", "vrxe1"))
	})
	t.Run("16_devices", func(t *testing.T) {
		addRxeDevices(t, 2, 16)
		compare(t, nil, outputLines("rxe0", "rxe15", "vout15"))
	})
	if kernelSeries61() {
		// A captured tree is read from its files alone (internal/
		// inventory captured.go): what the kernel runs cannot change
		// these lines, so the 6.12 run compares them, once.
		t.Log("captured trees: compared in the run on the other kernel series (6.12)")
		return
	}
	for _, tree := range []string{"rxe", "mlx5"} {
		t.Run("captured_"+tree, func(t *testing.T) {
			// From the guest's memory: over the 9p share every file of
			// the tree is a round trip, for each of the command lines.
			root := t.TempDir()
			sh(t, "cp", "-a", "../../internal/sysfs/testdata/"+tree+"/.", root)
			dev := map[string]string{"rxe": "rxe0", "mlx5": "mlx5_0"}[tree]
			compare(t, []string{"--sysfs-root", root}, outputLines(dev, dev, "eth0"))
		})
	}
}

// outputLines is the command lines compared: every read-only command of
// the README with its filters, a device, a port, an unknown name and an
// unknown port; dev is a device, last the last one, netdev one's netdev.
// Each runs as a table and with -j; those whose details differ also with
// -d, -dd, -d -j and -dd -j -p (outputVariants). Not compared: version
// (the two binaries are different commits), top, monitor, exporter,
// doctor and perf (they print times and rates), and the writes.
func outputLines(dev, last, netdev string) []outputLine {
	port := dev + "/1"
	detailed := [][]string{
		{"dev", "show"}, {"dev", "show", last}, {"dev", "query", dev}, {"link", "show"}, {"link", "show", port},
		{"gids"}, {"counters", port}, {"res"}, {"statistic", "qp"},
	}
	plain := [][]string{
		{"dev"}, {"dev", "list"}, {"dev", "show", dev}, {"dev", "show", "nosuch"},
		{"dev", "query"}, {"dev", "query", last}, {"dev", "query", "nosuch"}, {"dev", "hca-caps", dev},
		{"link"}, {"link", "list"}, {"link", "show", dev}, {"link", "show", last + "/1"}, {"link", "show", dev + "/9"},
		{"link", "show", "nosuch"},
		{"gids", dev}, {"gids", port}, {"gids", "--type", "v2", "--ipv4"}, {"gids", "--netdev", netdev}, {"gids", "nosuch"},
		{"counters"}, {"counters", "--nonzero"}, {"counters", "--source", "netlink"},
		{"counters", "--source", "hw_counters", port}, {"counters", "nosuch"},
		{"res", "show"}, {"res", "list"}, {"res", dev}, {"res", "show", "nosuch"},
		{"res", "show", "qp", "link", port}, {"res", "qp", "--state", "rts"}, {"res", "show", "qp", "lqpn", "1-100"},
		{"res", "qp", "--link", dev + "/9"},
		{"statistic"}, {"statistic", "show"}, {"statistic", "show", "link", port}, {"statistic", "mode"},
		{"statistic", "mode", "supported"}, {"statistic", "qp", "mode"}, {"statistic", "mr"},
		{"statistic", "qp", "show", "link", port, "lqpn", "1"}, {"statistic", "qp", "show", "cntn", "1", "pid", "1"},
		{"statistic", "qp", "show", "lqpn", "x"}, {"statistic", "qp", "show", "link", dev + "/9"},
		{"statistic", "qp", "mode", "link", port}, {"statistic", "mode", "link", port},
		{"statistic", "mode", "supported", "link", port}, {"statistic", "mr", "dev", dev, "mrn", "1"},
		{"statistic", "mr", "dev", "nosuch"}, {"statistic", "mr", "lqpn", "1"},
		{"system"}, {"system", "show"}, {"system", "show", "netns"},
	}
	for _, o := range []string{"qp", "cq", "mr", "pd", "cm_id", "ctx", "srq"} {
		detailed = append(detailed, []string{"res", o})
		plain = append(plain, []string{"res", "show", o, "dev", dev})
	}
	// Once each (dev and last are one device on the captured trees).
	seen := map[string]bool{}
	var out []outputLine
	for i, l := range append(detailed, plain...) {
		if k := strings.Join(l, " "); !seen[k] {
			seen[k] = true
			out = append(out, outputLine{args: l, detailed: i < len(detailed)})
		}
	}
	return out
}

// outputLine is one command line of outputLines.
type outputLine struct {
	args     []string
	detailed bool // also run with -d and -dd
}

// outputVariants is the global flags a command line is run with: the
// table and JSON, and for a detailed line the two detail levels of each
// (-dd's JSON indented).
func outputVariants(l outputLine) [][]string {
	if !l.detailed {
		return [][]string{nil, {"-j"}}
	}
	return [][]string{nil, {"-j"}, {"-d"}, {"-dd"}, {"-d", "-j"}, {"-dd", "-j", "-p"}}
}

// readOnlyDiffs runs diff(i) for i in [0, n), readOnlyWorkers at a time,
// and each i whose diff is not "" once more, alone: the diffs that held,
// and how many ran again. For comparisons of command lines that only read
// (the guest's two vCPUs mostly wait on each exec), where one line may
// still see another's passing trace (ibv_devinfo and 'dev query' open a
// uverbs context, which 'rdma res show ctx' lists while it lives).
func readOnlyDiffs(n int, diff func(i int) string) (diffs []string, again int) {
	diffs = make([]string, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range readOnlyWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				diffs[i] = diff(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, d := range diffs {
		if d != "" {
			again++
			diffs[i] = diff(i)
		}
	}
	return diffs, again
}

// readOnlyWorkers is how many command lines readOnlyDiffs runs at once.
const readOnlyWorkers = 4

// outputDiff runs args with both binaries and says how their results
// differ ("" if not at all): the exit codes, or the first differing line
// of stdout or stderr, or why one could not run.
func outputDiff(base, bin string, args []string) string {
	bo, be, bc, err := runOutput(base, args)
	if err != nil {
		return err.Error()
	}
	no, ne, nc, err := runOutput(bin, args)
	if err != nil {
		return err.Error()
	}
	switch {
	case bc != nc:
		return fmt.Sprintf("exit %d, was %d (stderr %q, was %q)", nc, bc, ne, be)
	case bo != no:
		return "stdout " + firstDiff(bo, no)
	case be != ne:
		return "stderr " + firstDiff(be, ne)
	}
	return ""
}

// firstDiff names the first line where b differs from a.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y || i >= len(al) || i >= len(bl) {
			return fmt.Sprintf("line %d: %q, was %q", i+1, y, x)
		}
	}
	return "differs"
}

// runOutput runs bin with args: its stdout, stderr and exit code.
func runOutput(bin string, args []string) (string, string, int, error) {
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	// Colors and widths as for a script: neither binary sees a terminal.
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case err == nil:
		return o.String(), e.String(), 0, nil
	case errors.As(err, &xe) && xe.Exited():
		return o.String(), e.String(), xe.ExitCode(), nil
	}
	return "", "", 0, fmt.Errorf("%s %s: %v", bin, strings.Join(args, " "), err)
}

// outputsAllowed reads testdata/outputs-base's "allow [captured] WORDS"
// lines ("captured": only on the captured trees).
func outputsAllowed(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("testdata/outputs-base")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allow [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if w := strings.Fields(sc.Text()); len(w) > 1 && w[0] == "allow" {
			allow = append(allow, w[1:])
		}
	}
	return allow
}

// allowed: whether line starts with the words of an allow line (one
// marked captured only when captured is).
func allowed(allow [][]string, captured bool, line []string) bool {
	for _, a := range allow {
		if a[0] == "captured" {
			if !captured {
				continue
			}
			a = a[1:]
		}
		if len(a) <= len(line) && strings.Join(line[:len(a)], " ") == strings.Join(a, " ") {
			return true
		}
	}
	return false
}

// holdResources starts processes that hold RDMA objects until the test
// ends: ibv_srq_pingpong's server on rxe0 (a context, PD, MR, CQ, an SRQ
// and its QPs) and a perftest RDMA CM server on rxe1 (a listening CM ID),
// and waits until res shows both.
func holdResources(t *testing.T) {
	t.Helper()
	srq := startSide(t, "ibv_srq_pingpong", "ibv_srq_pingpong", []string{"-d", "rxe0", "-g", "1", "-p", "18950"})
	cm := startSide(t, "ib_send_bw", "ib_send_bw", []string{"-d", "rxe1", "-R", "-p", "18951"})
	ok := vmcheck.Until(30*time.Second, func() bool { return srq.ended() || cm.ended() }, func() bool {
		return vmcheck.QPsOf(t, srq.cmd.Process.Pid) > 0 && vmcheck.CMListening(t, 18951)
	})
	if !ok {
		t.Fatalf("the resource holders did not start: ibv_srq_pingpong %s %q, ib_send_bw %s %q",
			srq.how(), srq.stderr.String(), cm.how(), cm.stderr.String())
	}
}

// addRxeDevices adds rxeFROM..rxeTO-1, each on a veth voutK whose peer is
// up (so the port is ACTIVE), IPv6 off on both (no address, so no GID,
// appears while the outputs are compared); all removed at the end.
func addRxeDevices(t *testing.T, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		v := "vout" + strconv.Itoa(i)
		sh(t, "ip", "link", "add", v, "type", "veth", "peer", "name", v+"p")
		t.Cleanup(func() { quiet(t, "ip", "link", "del", v) })
		for _, n := range []string{v, v + "p"} {
			sh(t, "sysctl", "-q", "-w", "net.ipv6.conf."+n+".disable_ipv6=1")
			sh(t, "ip", "link", "set", n, "up")
		}
		name := "rxe" + strconv.Itoa(i)
		sh(t, "rdma", "link", "add", name, "type", "rxe", "netdev", v)
		t.Cleanup(func() { quiet(t, "rdma", "link", "delete", name) })
	}
	if !vmcheck.Until(30*time.Second, nil, func() bool {
		out, err := exec.Command("rdma", "link", "show").Output()
		return err == nil && strings.Count(string(out), "state ACTIVE") == to
	}) {
		t.Fatalf("not every port ACTIVE: %s", sh(t, "rdma", "link", "show"))
	}
}
