//go:build vmtest

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// rdma's -dd (driver details), -r (raw dumps) and the res filters rdmactl
// added (users, mrlen, src/dst-addr, src/dst-port), against iproute2's
// rdma on the same objects; and one abbreviated write read back with rdma.

// drvKeys is the sorted drv_* keys of a list of objects.
func drvKeys(l []map[string]any) []string {
	var ks []string
	for _, o := range l {
		for k := range o {
			if strings.HasPrefix(k, "drv_") {
				ks = append(ks, fmt.Sprintf("%v/%s", o["ifname"], k))
			}
		}
	}
	sort.Strings(ks)
	return ks
}

// TestVMResDriverDetails: rdmactl -dd -j res show OBJ lists what rdma -dd
// -j res show OBJ lists, field by field, driver details included (rxe
// reports none: both tools must then print none).
func TestVMResDriverDetails(t *testing.T) {
	startPingpongServer(t, "18794")
	for _, obj := range []struct {
		name string
		keys []string
	}{{"qp", []string{"ifname", "lqpn"}}, {"cq", []string{"ifname", "cqn"}}, {"mr", []string{"ifname", "mrn"}},
		{"pd", []string{"ifname", "pdn"}}, {"ctx", []string{"ifname", "ctxn"}}, {"cm_id", []string{"ifname", "cm-idn"}}} {
		theirs := rdmaJSONList(t, []string{"-dd", "res", "show", obj.name})
		ours := ourList(t, "-dd", "-j", "res", "show", obj.name)
		// The same objects, and every key rdma prints (drv_* included)
		// with the same value in ours (keys as numbers, not hex strings).
		n := compareFacts(t, "-dd res show "+obj.name, obj.keys, nil, theirs, ours)
		ourKeys := make([]string, len(obj.keys))
		for i, k := range obj.keys {
			ourKeys[i] = strings.ReplaceAll(k, "-", "_")
		}
		o := byKey(ours, ourKeys...)
		for k, r := range byKey(theirs, obj.keys...) {
			if o[k] != nil {
				sameKeys(t, "-dd res show "+obj.name+" "+k, r, o[k])
			}
		}
		if obj.name != "cm_id" && n == 0 {
			t.Errorf("-dd res show %s: no objects to compare", obj.name)
		}
		if r, o := drvKeys(theirs), drvKeys(ours); fmt.Sprint(r) != fmt.Sprint(o) {
			t.Errorf("-dd res show %s: driver keys: rdma %v, rdmactl %v", obj.name, r, o)
		} else {
			t.Logf("-dd res show %s: %d driver attributes in both", obj.name, len(r))
		}
	}
	// dev and link: the kernel sends no driver tables there, -dd is -d
	// in both tools.
	for _, c := range []struct {
		words []string
		keys  []string
	}{{[]string{"dev", "show"}, []string{"ifname"}}, {[]string{"link", "show"}, []string{"ifname", "port"}}} {
		theirs := byKey(rdmaJSONList(t, append([]string{"-dd"}, c.words...)), c.keys...)
		ours := byKey(ourList(t, append([]string{"-dd", "-j"}, c.words...)...), c.keys...)
		if len(theirs) == 0 || len(theirs) != len(ours) {
			t.Errorf("-dd %v: rdma %d objects, ours %d", c.words, len(theirs), len(ours))
		}
		for k, r := range theirs {
			if ours[k] != nil {
				sameKeys(t, fmt.Sprintf("-dd %v %s", c.words, k), r, ours[k])
			}
		}
	}
	out, errs, code := runCmd(t, "-dd", "res", "cq")
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "DRIVER") {
		t.Errorf("-dd res cq: exit %d %q, table %q: want a DRIVER column", code, errs, out)
	}
}

// rawOps are the raw dump commands: RES_{QP,CQ,MR}_GET_RAW, RES_SRQ_GET_RAW.
var rawOps = map[string]bool{"0x1413": true, "0x1414": true, "0x1415": true, "0x1419": true}

// TestVMResRawRefused: rxe has no raw dumps. For qp, cq and mr (objects
// exist: a pingpong server's, and the kernel's GSI QP and CQs) rdmactl
// sends the kernel the request rdma -r sends, byte for byte, and the
// kernel's refusal (EINVAL, which rdma prints as "error: Invalid argument"
// and exit 1) is one line and exit 5.
func TestVMResRawRefused(t *testing.T) {
	startPingpongServer(t, "18795")
	bin := os.Getenv("RDMACTL_BIN")
	// Each of qp, cq, mr once (strace under TCG is slow), with a link, a
	// device and rdma's abbreviations.
	for _, line := range []string{"res show qp link rxe0/1", "res show cq dev rxe1", "r s m"} {
		words := strings.Fields(line)
		theirs, tcode, terrs := tracedOps(t, rawOps, append([]string{"rdma", "-r"}, words...)...)
		ours, ocode, oerrs := tracedOps(t, rawOps, append([]string{bin, "-r"}, words...)...)
		if tcode == 0 || !strings.Contains(terrs, "Invalid argument") {
			t.Errorf("rdma -r %s: exit %d, stderr %q; want rxe's refusal", line, tcode, terrs)
		}
		if ocode != cmdutil.ExitUnsupported || strings.Count(oerrs, "\n") != 1 || !strings.Contains(oerrs, "invalid argument") || !strings.Contains(oerrs, "driver has none") {
			t.Errorf("rdmactl -r %s: exit %d, stderr %q; want exit 5 and one line with the kernel's invalid argument", line, ocode, oerrs)
		}
		if len(theirs) == 0 || fmt.Sprint(theirs) != fmt.Sprint(ours) {
			t.Errorf("-r %s: requests differ\n rdma    %v\n rdmactl %v", line, theirs, ours)
		} else {
			t.Logf("-r %s: %d request(s) alike: %v; rdma %q, rdmactl %q", line, len(ours), ours, strings.TrimSpace(terrs), strings.TrimSpace(oerrs))
		}
	}
	// SRQ: rdma 6.1 has no SRQ raw dump (it lists SRQs as without -r);
	// rdmactl asks for one. rxe has no SRQ here, so 6.12 answers an empty
	// list; 6.1 does not know the command and answers EINVAL (exit 5).
	out, errs, code := runBin(t, nil, "-j", "-r", "res", "srq")
	newKernel := !strings.HasPrefix(strings.TrimSpace(vmRun(t, "uname", "-r")), "6.1.")
	switch {
	case newKernel && code == 0 && strings.TrimSpace(out) == "[]":
		t.Logf("-r res srq: this kernel has RES_SRQ_GET_RAW: []")
	case !newKernel && code == cmdutil.ExitUnsupported && strings.Contains(errs, "invalid argument") && strings.Count(errs, "\n") == 1:
		t.Logf("-r res srq: this kernel has no RES_SRQ_GET_RAW: %s", strings.TrimSpace(errs))
	default:
		t.Errorf("-r res srq: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// startCMPerf runs an ib_write_bw pair over rdma_cm (-R) on rxe0 for the
// length of the test, so that CM IDs with source and destination
// addresses exist; it waits until rdma lists them and nothing changes,
// then stops both processes (SIGSTOP): their objects stay as they are,
// and the two no longer spin on the guest's two CPUs (perftest's client
// posts writes and polls, its CM exchange polls too) while the test
// runs some forty commands. The phases' times are logged.
func startCMPerf(t *testing.T, port string) {
	t.Helper()
	t0 := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "ib_write_bw", "-R", "-d", "rxe0", "-p", port, "-D", "600")
	if err := srv.Start(); err != nil {
		t.Fatalf("ib_write_bw -R server: %v", err)
	}
	// perftest's client does not retry: start it once the server's CM id
	// listens.
	if p, _ := strconv.Atoi(port); !vmcheck.Until(30*time.Second, nil, func() bool { return vmcheck.CMListening(t, p) }) {
		cancel()
		_ = srv.Wait()
		t.Fatalf("ib_write_bw -R server not listening on %s within 30 s", port)
	}
	tListen := time.Since(t0)
	cli := exec.CommandContext(ctx, "ib_write_bw", "-R", "-d", "rxe0", "-p", port, "-D", "600", "10.77.0.1")
	if err := cli.Start(); err != nil {
		cancel()
		_ = srv.Wait()
		t.Fatalf("ib_write_bw -R client: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		_ = cli.Wait()
		if !waitFor(20*time.Second, func() bool { return len(rdmaList(t, "res", "show", "cm_id")) == 0 }) {
			t.Errorf("CM IDs left after the perf pair: %v", rdmaList(t, "res", "show", "cm_id"))
		}
	})
	if !waitFor(60*time.Second, func() bool {
		n := 0
		for _, c := range rdmaList(t, "res", "show", "cm_id") {
			if c["dst-addr"] != nil {
				n++
			}
		}
		return n >= 2
	}) {
		t.Fatalf("ib_write_bw -R made no connected CM IDs: %v", rdmaList(t, "res", "show", "cm_id"))
	}
	tConn := time.Since(t0)
	// perftest connects twice (its exchange, then the data QPs) and makes
	// CQs and MRs after the first: wait until nothing changes for 3 s.
	last, since := resShow(t), time.Now()
	if !waitFor(60*time.Second, func() bool {
		if now := resShow(t); now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) > 3*time.Second
	}) {
		t.Fatalf("resources still changing with the perf pair running:\n%s", last)
	}
	for _, p := range []*os.Process{srv.Process, cli.Process} {
		if err := p.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping ib_write_bw: %v", err)
		}
	}
	// Cleanup's SIGKILL ends a stopped process as any other.
	t.Logf("ib_write_bw -R pair: server listening after %v, CM IDs connected after %v, resources settled after %v; stopped",
		tListen.Round(time.Millisecond), tConn.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}

// TestVMResFiltersMatchRdma: the filters rdmactl added select what rdma's
// select, in rdma's words and as flags: users (cq, pd), mrlen (mr),
// src-addr, dst-addr, src-port, dst-port (cm_id).
func TestVMResFiltersMatchRdma(t *testing.T) {
	startPingpongServer(t, "18796")
	startCMPerf(t, "18797")
	// Values taken from what exists now, so that each filter keeps some
	// objects and leaves others out.
	cm := rdmaList(t, "res", "show", "cm_id")
	var cliPort string
	for _, c := range cm {
		if a, ok := c["src-addr"].(string); ok && !strings.HasSuffix(a, ":18797") {
			cliPort = a[strings.LastIndex(a, ":")+1:]
		}
	}
	if cliPort == "" {
		t.Fatalf("no client CM ID in %v", cm)
	}
	lines := []struct {
		line string
		keys []string
		min  int // objects both must list
	}{
		{"res show cq users 2", []string{"ifname", "cqn"}, 1},
		{"res show cq users 0-1", []string{"ifname", "cqn"}, 1},
		{"res show cq dev rxe0 users 2 poll-ctx workqueue", []string{"ifname", "cqn"}, 1},
		{"res show pd users 2", []string{"ifname", "pdn"}, 1},
		{"res show pd users 0,1", []string{"ifname", "pdn"}, 1},
		{"res show mr mrlen 4096", []string{"ifname", "mrn"}, 1},
		{"res show mr mrlen 4097-1000000", []string{"ifname", "mrn"}, 1},
		{"res show mr mrlen 1", []string{"ifname", "mrn"}, 0},
		{"res show cm_id src-port 18797", []string{"ifname", "cm-idn"}, 1},
		{"res show cm_id dst-port 18797", []string{"ifname", "cm-idn"}, 1},
		{"res show cm_id src-port " + cliPort, []string{"ifname", "cm-idn"}, 1},
		{"res show cm_id src-addr 10.77.0.1", []string{"ifname", "cm-idn"}, 2},
		{"res show cm_id dst-addr 10.77.0.1 dst-port 18797", []string{"ifname", "cm-idn"}, 1},
		{"res show cm_id src-addr 10.77.0.9", []string{"ifname", "cm-idn"}, 0},
		{"res show cm_id dst-port 1-1000", []string{"ifname", "cm-idn"}, 0},
	}
	for _, c := range lines {
		words := strings.Fields(c.line)
		theirs := rdmaJSONList(t, words)
		ours := ourList(t, append([]string{"-j"}, words...)...)
		if n := compareFacts(t, c.line, c.keys, nil, theirs, ours); n < c.min {
			t.Errorf("%s: both list %d objects, want at least %d", c.line, n, c.min)
		}
		// The same as flags: "res OBJ --KEY VALUE ...".
		flags := []string{"-j", "res", words[2]}
		for i := 3; i+1 < len(words); i += 2 {
			if words[i] == "dev" {
				flags = append(flags, words[i+1])
				continue
			}
			flags = append(flags, "--"+words[i], words[i+1])
		}
		compareFacts(t, strings.Join(flags, " "), c.keys, nil, theirs, ourList(t, flags...))
	}
	// The total is what rdma lists without a filter: the filters split it.
	all := len(rdmaList(t, "res", "show", "cq"))
	if n := len(ourList(t, "-j", "res", "cq", "--users", "0-1")) + len(ourList(t, "-j", "res", "cq", "--users", "2-1000")); n != all {
		t.Errorf("cq users 0-1 and 2-1000: %d objects, rdma lists %d", n, all)
	}
	wantRefusedCode(t, cmdutil.ExitUsage, "filters nothing", "res", "show", "cm_id", "dev-type", "ib")
	wantRefusedCode(t, cmdutil.ExitUsage, "does not apply to qp", "res", "show", "qp", "users", "1")
}

// wantRefusedCode runs the rdmactl binary: exit code, one line with want.
func wantRefusedCode(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	out, errs, got := runBin(t, nil, args...)
	if got != code || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, want) {
		t.Errorf("rdmactl %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(args, " "), got, out, errs, code, want)
	}
}

// TestVMAbbreviatedWrites: abbreviated dev set lines do what rdma does
// with them, read back with rdma: a rename ("d se DEV na NEW", back with
// "n", which dev.c's table reads as name) and adaptive moderation ("a o",
// "a of").
func TestVMAbbreviatedWrites(t *testing.T) {
	t.Cleanup(func() {
		if sysfsHas("rdab1") {
			quiet(t, "rdma", "dev", "set", "rdab1", "name", "rxe1")
		}
		quiet(t, "rdma", "dev", "set", "rxe1", "adaptive-moderation", "off")
	})
	idx := rdmaDevNames(t)["rxe1"]["ifindex"]
	dim := func() any { return rdmaDevNames(t)["rxe1"]["adaptive-moderation"] }
	for _, tool := range []string{"rdma", "rdmactl"} {
		do := func(line string) {
			t.Helper()
			args := strings.Fields(line)
			if tool == "rdma" {
				sh(t, "rdma", args...)
				return
			}
			wantOK(t, args...)
		}
		do("d se rxe1 na rdab1")
		if d := rdmaDevNames(t)["rdab1"]; d == nil || d["ifindex"] != idx || rdmaDevNames(t)["rxe1"] != nil {
			t.Errorf("%s d se rxe1 na rdab1: rdma dev show has %v", tool, rdmaDevNames(t))
		}
		do("dev se rdab1 n rxe1") // "se": "s" is show in dev.c's table
		if rdmaDevNames(t)["rxe1"] == nil {
			t.Fatalf("%s: rxe1 not back: %v", tool, rdmaDevNames(t))
		}
		do("dev set rxe1 a o")
		if v := dim(); v != true {
			t.Errorf("%s dev set rxe1 a o: adaptive-moderation %v", tool, v)
		}
		do("dev set rxe1 adaptive of")
		if v := dim(); v != false {
			t.Errorf("%s dev set rxe1 adaptive of: adaptive-moderation %v", tool, v)
		}
	}
}
