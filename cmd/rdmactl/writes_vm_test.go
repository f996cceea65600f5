//go:build vmtest

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/render"
)

// The writes, in the VM: each one the kernel performs on rxe is read back
// with iproute2's rdma and sysfs; each one rxe refuses is compared, request
// by request, with what rdma sends for the same command line (both traced
// with strace: the NLDEV messages each tool hands to the kernel); without
// CAP_NET_ADMIN every write fails in one line with exit 4. Every test puts
// the system back as it found it (t.Cleanup), which suite.sh checks.

// runBin runs the rdmactl binary (a process of its own, as a user runs it)
// with prefix (setpriv, strace) in front.
func runBin(t *testing.T, prefix []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	argv := append(append(append([]string{}, prefix...), bin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &xe):
		code = xe.ExitCode()
	default:
		t.Fatalf("%v: %v", argv, err)
	}
	return o.String(), e.String(), code
}

// wantOK: a write prints nothing and exits 0.
func wantOK(t *testing.T, args ...string) {
	t.Helper()
	out, errs, code := runBin(t, nil, args...)
	if code != 0 || out != "" || errs != "" {
		t.Fatalf("rdmactl %s: exit %d, stdout %q, stderr %q; want exit 0 and no output", strings.Join(args, " "), code, out, errs)
	}
}

// wantRefused: one line on stderr, naming want, and exit code.
func wantRefused(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	out, errs, got := runBin(t, nil, args...)
	if got != code || out != "" || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "rdmactl: ") || !strings.Contains(errs, want) {
		t.Errorf("rdmactl %s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q", strings.Join(args, " "), got, out, errs, code, want)
	}
}

// sh runs a command that must succeed (test setup).
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// quiet runs a clean-up command; failures are logged only.
func quiet(t *testing.T, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Logf("cleanup: %s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// rdmaDevNames is the device names rdma -j dev show lists.
func rdmaDevNames(t *testing.T) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, d := range rdmaList(t, "dev", "show", "-d") {
		m[fmt.Sprint(d["ifname"])] = d
	}
	return m
}

func sysfsHas(dev string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/infiniband", dev))
	return err == nil
}

// addVeth makes a veth pair NAME/NAMEp, up, removed at the end.
func addVeth(t *testing.T, name string) {
	t.Helper()
	sh(t, "ip", "link", "add", name, "type", "veth", "peer", "name", name+"p")
	t.Cleanup(func() { quiet(t, "ip", "link", "del", name) })
	sh(t, "ip", "link", "set", name, "up")
	sh(t, "ip", "link", "set", name+"p", "up")
}

// addNetns makes a named network namespace, removed at the end.
func addNetns(t *testing.T, name string) {
	t.Helper()
	sh(t, "ip", "netns", "add", name)
	t.Cleanup(func() { quiet(t, "ip", "netns", "del", name) })
}

// rdmaNetnsMode is the mode "rdma system show" prints (rdma 6.1 prints
// text even with -j).
func rdmaNetnsMode(t *testing.T) string {
	t.Helper()
	f := strings.Fields(vmRun(t, "rdma", "system", "show"))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "netns" {
			return f[i+1]
		}
	}
	t.Fatalf("rdma system show: no netns mode in %q", f)
	return ""
}

func ourSystem(t *testing.T) map[string]any {
	t.Helper()
	out, errs, code := runBin(t, nil, "-j", "system", "show")
	if code != 0 {
		t.Fatalf("system show: exit %d: %s", code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("system show: %v: %s", err, out)
	}
	return m
}

func TestVMLinkAddDelete(t *testing.T) {
	addVeth(t, "vwr0")
	t.Cleanup(func() {
		if sysfsHas("rxew0") {
			quiet(t, "rdma", "link", "delete", "rxew0")
		}
	})
	wantOK(t, "link", "add", "rxew0", "type", "rxe", "netdev", "vwr0")
	// Read back: rdma sees the device and its port on vwr0; so does sysfs.
	var port map[string]any
	for _, p := range rdmaList(t, "link", "show") {
		if p["ifname"] == "rxew0" {
			port = p
		}
	}
	if port == nil || port["netdev"] != "vwr0" {
		t.Fatalf("rdma link show after link add: %v", port)
	}
	if nd, err := os.ReadFile("/sys/class/infiniband/rxew0/ports/1/gid_attrs/ndevs/0"); err != nil || strings.TrimSpace(string(nd)) != "vwr0" {
		t.Fatalf("sysfs: rxew0's GID 0 netdev: %q, %v", nd, err)
	}
	// Refusals, each one line, nothing changed.
	wantRefused(t, cmdutil.ExitFailure, "exists already", "link", "add", "rxew0", "type", "rxe", "netdev", "vwr0")
	wantRefused(t, cmdutil.ExitFailure, "already has an rxe device", "link", "add", "rxew1", "type", "rxe", "netdev", "vwr0")
	wantRefused(t, cmdutil.ExitNotFound, "no network device", "link", "add", "rxew1", "type", "rxe", "netdev", "nosuchnetdev")
	wantRefused(t, cmdutil.ExitUnsupported, "no siw link type", "link", "add", "siww1", "type", "siw", "netdev", "vwr0") // Debian has no siw
	if sysfsHas("rxew1") || sysfsHas("siww1") {
		t.Fatal("a refused link add left a device behind")
	}
	wantOK(t, "link", "delete", "rxew0")
	if _, ok := rdmaDevNames(t)["rxew0"]; ok || sysfsHas("rxew0") {
		t.Fatal("rxew0 still there after link delete (rdma or sysfs)")
	}
	wantRefused(t, cmdutil.ExitNotFound, `no RDMA device "rxew0"`, "link", "delete", "rxew0")
}

func TestVMDevRename(t *testing.T) {
	t.Cleanup(func() {
		if sysfsHas("rxew_a") {
			quiet(t, "rdma", "dev", "set", "rxew_a", "name", "rxe1")
		}
	})
	idx := rdmaDevNames(t)["rxe1"]["ifindex"]
	wantOK(t, "dev", "set", "rxe1", "name", "rxew_a")
	devs := rdmaDevNames(t)
	if d, ok := devs["rxew_a"]; !ok || d["ifindex"] != idx || !sysfsHas("rxew_a") || sysfsHas("rxe1") {
		t.Fatalf("after rename: rdma %v, sysfs rxew_a %v rxe1 %v", devs, sysfsHas("rxew_a"), sysfsHas("rxe1"))
	}
	wantRefused(t, cmdutil.ExitFailure, "exists already", "dev", "set", "rxew_a", "name", "rxe0")
	wantRefused(t, cmdutil.ExitUsage, "too long", "dev", "set", "rxew_a", "name", strings.Repeat("r", 64))
	wantOK(t, "dev", "set", "rxew_a", "name", "rxe1")
	if d, ok := rdmaDevNames(t)["rxe1"]; !ok || d["ifindex"] != idx || !sysfsHas("rxe1") {
		t.Fatal("rename back to rxe1 did not take")
	}
}

func TestVMDevAdaptiveModeration(t *testing.T) {
	orig := rdmaDevNames(t)["rxe0"]["adaptive-moderation"]
	if orig == nil {
		t.Fatal("rdma -d dev show rxe0 has no adaptive-moderation on this kernel")
	}
	t.Cleanup(func() {
		quiet(t, "rdma", "dev", "set", "rxe0", "adaptive-moderation", render.OnOff(ptr(orig == true)))
	})
	for _, v := range []string{"on", "off", "on"} {
		wantOK(t, "dev", "set", "rxe0", "adaptive-moderation", v)
		if got := rdmaDevNames(t)["rxe0"]["adaptive-moderation"]; got != (v == "on") {
			t.Fatalf("after adaptive-moderation %s: rdma says %v", v, got)
		}
		ours := ourList(t, "-j", "dev", "show", "rxe0")
		if len(ours) != 1 || ours[0]["adaptive_moderation"] != (v == "on") {
			t.Fatalf("after adaptive-moderation %s: we say %v", v, ours)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestVMSystemNetnsMode(t *testing.T) {
	orig := rdmaNetnsMode(t)
	t.Cleanup(func() {
		if rdmaNetnsMode(t) != orig {
			quiet(t, "rdma", "system", "set", "netns", orig)
		}
	})
	if s := ourSystem(t); s["netns"] != orig {
		t.Fatalf("system show: netns %v, rdma says %s", s["netns"], orig)
	}
	for _, m := range []string{"exclusive", "shared", "exclusive", orig} {
		wantOK(t, "system", "set", "netns", m)
		if got := rdmaNetnsMode(t); got != m {
			t.Fatalf("after system set netns %s: rdma says %s", m, got)
		}
		if s := ourSystem(t); s["netns"] != m {
			t.Fatalf("after system set netns %s: we say %v", m, s["netns"])
		}
	}
	// The kernel changes the mode only while init_net is the only namespace.
	addNetns(t, "wrbusy")
	other := map[string]string{"shared": "exclusive", "exclusive": "shared"}[orig]
	wantRefused(t, cmdutil.ExitFailure, "EBUSY", "system", "set", "netns", other)
	if got := rdmaNetnsMode(t); got != orig {
		t.Fatalf("a refused system set changed the mode to %s", got)
	}
}

// TestVMPrivilegedQKey: rdma 6.1 can neither set nor show it, so the
// setting is read back with our SYS_GET (the request is compared with
// iproute2's in TestVMWriteRequestsMatchRdma and TestWriteRequests).
func TestVMPrivilegedQKey(t *testing.T) {
	s := ourSystem(t)
	orig, has := s["privileged_qkey"].(bool)
	if !has {
		wantRefused(t, cmdutil.ExitUnsupported, "no privileged Q_Key setting", "system", "set", "privileged-qkey", "on")
		t.Logf("kernel without privileged-qkey: refused as documented")
		return
	}
	t.Cleanup(func() {
		if ourSystem(t)["privileged_qkey"] != orig {
			runBin(t, nil, "system", "set", "privileged-qkey", render.OnOff(&orig))
		}
	})
	for _, v := range []bool{!orig, orig} {
		wantOK(t, "system", "set", "privileged-qkey", render.OnOff(&v))
		if got := ourSystem(t)["privileged_qkey"]; got != v {
			t.Fatalf("after privileged-qkey %v: SYS_GET says %v", v, got)
		}
	}
}

// TestVMStatisticMatchesRdma: the counter views agree with rdma's, and
// auto mode, which rxe takes, is read back by rdma.
func TestVMStatisticMatchesRdma(t *testing.T) {
	modes := func() (rdma, ours map[string]string) {
		rdma, ours = map[string]string{}, map[string]string{}
		for _, m := range rdmaList(t, "statistic", "qp", "mode") {
			rdma[fmt.Sprintf("%v/%v", m["ifname"], m["port"])] = fmt.Sprint(m["mode"])
		}
		for _, m := range ourList(t, "-j", "statistic", "qp", "mode") {
			ours[fmt.Sprintf("%v/%v", m["ifname"], m["port"])] = fmt.Sprint(m["mode"])
		}
		return rdma, ours
	}
	r, o := modes()
	if len(r) < 2 || fmt.Sprint(r) != fmt.Sprint(o) {
		t.Fatalf("qp mode: rdma %v, ours %v", r, o)
	}
	t.Cleanup(func() {
		if r, _ := modes(); r["rxe0/1"] != "qp auto off" {
			quiet(t, "rdma", "statistic", "qp", "set", "link", "rxe0/1", "auto", "off")
		}
	})
	wantOK(t, "statistic", "qp", "set", "link", "rxe0/1", "auto", "type", "on")
	r, o = modes()
	if !strings.HasPrefix(r["rxe0/1"], "qp auto type on") || fmt.Sprint(r) != fmt.Sprint(o) {
		t.Fatalf("after auto type on: rdma %v, ours %v", r, o)
	}
	ourMode := ourList(t, "-j", "statistic", "qp", "mode", "link", "rxe0/1")
	if len(ourMode) != 1 || ourMode[0]["counter_mode"] != "auto" || fmt.Sprint(ourMode[0]["auto"]) != "[type]" {
		t.Fatalf("qp mode link rxe0/1: %v", ourMode)
	}
	wantOK(t, "statistic", "qp", "set", "link", "rxe0/1", "auto", "off")
	r, o = modes()
	if r["rxe0/1"] != "qp auto off" || fmt.Sprint(r) != fmt.Sprint(o) {
		t.Fatalf("after auto off: rdma %v, ours %v", r, o)
	}
	// Lists rxe has nothing in: the same (empty) on both sides.
	for _, args := range [][]string{{"statistic", "qp", "show"}, {"statistic", "mode", "supported"}, {"statistic", "mode"}, {"statistic", "mr"}} {
		rl, ol := rdmaList(t, args...), ourList(t, append([]string{"-j"}, args...)...)
		if len(rl) != len(ol) {
			t.Errorf("%v: rdma %d entries, ours %d", args, len(rl), len(ol))
		}
	}
	wantRefused(t, cmdutil.ExitNotFound, "no RDMA port rxe0/7", "statistic", "qp", "mode", "link", "rxe0/7")
}

// nlRequest is one NLDEV request as strace shows it.
type nlRequest struct {
	typ, flags string
	attrs      []byte
}

func (r nlRequest) String() string { return fmt.Sprintf("%s %s % x", r.typ, r.flags, r.attrs) }

var straceMsg = regexp.MustCompile(`nlmsg_type=(0x[0-9a-f]+)[^,]*, nlmsg_flags=([^,]+), nlmsg_seq=\d+, nlmsg_pid=\d+\}(?:, "((?:\\x[0-9a-f]{2})*)")?`)

// writeOps are the NLDEV commands compared: the writes and
// STAT_GET_STATUS (what "statistic set" asks before writing).
var writeOps = map[string]bool{"0x1402": true, "0x1403": true, "0x1404": true, "0x1407": true, "0x1410": true, "0x1412": true, "0x1418": true}

// traced runs argv under strace and returns the NLDEV write requests it
// sent, its exit code and its stderr.
func traced(t *testing.T, argv ...string) ([]nlRequest, int, string) {
	t.Helper()
	return tracedOps(t, writeOps, argv...)
}

// tracedOps is traced for the NLDEV commands in ops.
func tracedOps(t *testing.T, ops map[string]bool, argv ...string) ([]nlRequest, int, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "strace")
	cmd := exec.Command("strace", append([]string{"-f", "-qq", "-e", "trace=sendto,sendmsg", "-xx", "-s", "65535", "-o", log}, argv...)...)
	var e bytes.Buffer
	cmd.Stderr = &e
	err := cmd.Run()
	code := 0
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		code = xe.ExitCode()
	} else if err != nil {
		t.Fatalf("strace %v: %v", argv, err)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var out []nlRequest
	for _, m := range straceMsg.FindAllStringSubmatch(string(b), -1) {
		if !ops[m[1]] {
			continue
		}
		var attrs []byte
		for _, h := range strings.Split(m[3], `\x`)[1:] {
			v, _ := strconv.ParseUint(h, 16, 8)
			attrs = append(attrs, byte(v))
		}
		out = append(out, nlRequest{m[1], m[2], attrs})
	}
	return out, code, e.String()
}

// maskNetnsFD zeroes the value of RDMA_NLDEV_NET_NS_FD (68): a file
// descriptor number of the sending process, which differs between two
// processes that open the same namespace.
func maskNetnsFD(rs []nlRequest) {
	for _, r := range rs {
		for b := r.attrs; len(b) >= 4; {
			l := int(b[0]) | int(b[1])<<8
			if l < 4 || l > len(b) {
				break
			}
			if typ := int(b[2]) | int(b[3])<<8; typ == 68 && l == 8 {
				copy(b[4:8], []byte{0, 0, 0, 0})
			}
			b = b[(l+3)&^3:]
		}
	}
}

// TestVMWriteRequestsMatchRdma: for the writes rxe refuses (moving to a
// netns, binding QPs to counters, optional counters) and for the ones it
// takes, rdmactl sends the kernel the same NLDEV requests as rdma for the
// same command line: command, flags and attributes, byte for byte (the
// netns fd number aside). privileged-qkey, which rdma 6.1 cannot send, is
// compared with the request iproute2's rdma/sys.c builds.
func TestVMWriteRequestsMatchRdma(t *testing.T) {
	addNetns(t, "wrmove")
	addVeth(t, "vwr1")
	t.Cleanup(func() {
		quiet(t, "rdma", "statistic", "qp", "set", "link", "rxe0/1", "auto", "off")
		quiet(t, "rdma", "dev", "set", "rxe0", "adaptive-moderation", "off")
		if sysfsHas("rxew9") {
			quiet(t, "rdma", "link", "delete", "rxew9")
		}
	})
	cases := []struct {
		args []string
		code int    // our exit code
		want string // in our one line, when refused
	}{
		{[]string{"dev", "set", "rxe0", "netns", "wrmove"}, cmdutil.ExitUnsupported, "EOPNOTSUPP"},
		{[]string{"statistic", "qp", "bind", "link", "rxe0/1", "lqpn", "1"}, cmdutil.ExitNotFound, "ENOENT"},
		{[]string{"statistic", "qp", "bind", "link", "rxe0/1", "lqpn", "1", "cntn", "3"}, cmdutil.ExitNotFound, "ENOENT"},
		{[]string{"statistic", "qp", "unbind", "link", "rxe0/1", "cntn", "1", "lqpn", "1"}, cmdutil.ExitNotFound, "ENOENT"},
		{[]string{"statistic", "set", "link", "rxe0/1", "optional-counters", "rdma_sends"}, cmdutil.ExitUnsupported, "no optional counters"},
		{[]string{"statistic", "unset", "link", "rxe0/1", "optional-counters"}, 0, ""},
		{[]string{"statistic", "qp", "set", "link", "rxe0/1", "auto", "type", "on"}, 0, ""},
		{[]string{"statistic", "qp", "set", "link", "rxe0/1", "auto", "off"}, 0, ""},
		{[]string{"dev", "set", "rxe0", "adaptive-moderation", "on"}, 0, ""},
		{[]string{"dev", "set", "rxe0", "adaptive-moderation", "off"}, 0, ""},
		{[]string{"system", "set", "netns", rdmaNetnsMode(t)}, 0, ""},
		{[]string{"link", "add", "rxew9", "type", "rxe", "netdev", "vrxe0"}, cmdutil.ExitFailure, "EEXIST"},
		{[]string{"link", "add", "rxew9", "type", "rxe", "netdev", "vwr1"}, 0, ""},
		{[]string{"link", "delete", "rxew9"}, 0, ""},
	}
	bin := os.Getenv("RDMACTL_BIN")
	for _, tc := range cases {
		line := strings.Join(tc.args, " ")
		theirs, _, _ := traced(t, append([]string{"rdma"}, tc.args...)...)
		if tc.args[0] == "link" && tc.args[1] == "add" && tc.code == 0 {
			// rdma made it: remove it so that ours can make it again.
			sh(t, "rdma", "link", "delete", "rxew9")
		}
		if tc.args[0] == "link" && tc.args[1] == "delete" {
			// rdma deleted it: make it again, under a new index, and
			// expect rdma's request with that index.
			sh(t, "rdma", "link", "add", "rxew9", "type", "rxe", "netdev", "vwr1")
			idx := uint32(rdmaDevNames(t)["rxew9"]["ifindex"].(float64))
			if len(theirs) == 1 && len(theirs[0].attrs) == 8 {
				binary.NativeEndian.PutUint32(theirs[0].attrs[4:], idx)
			}
		}
		ours, code, errs := traced(t, append([]string{bin}, tc.args...)...)
		maskNetnsFD(theirs)
		maskNetnsFD(ours)
		if fmt.Sprint(theirs) != fmt.Sprint(ours) || (len(theirs) == 0 && tc.args[0] != "statistic") {
			t.Errorf("%s: requests differ\n rdma    %v\n rdmactl %v", line, theirs, ours)
		}
		if code != tc.code || (tc.code != 0 && (strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want))) || (tc.code == 0 && errs != "") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d with %q", line, code, errs, tc.code, tc.want)
		}
		t.Logf("%s: %d request(s) alike: %v", line, len(ours), ours)
	}
	// privileged-qkey: iproute2's sys.c sends SYS_SET with
	// NLM_F_REQUEST|NLM_F_ACK and one u8 attribute 96 (PRIVILEGED_QKEY_MODE).
	s := ourSystem(t)
	if orig, has := s["privileged_qkey"].(bool); has {
		t.Cleanup(func() { runBin(t, nil, "system", "set", "privileged-qkey", render.OnOff(&orig)) })
		for _, v := range []bool{true, false} {
			ours, code, errs := traced(t, bin, "system", "set", "privileged-qkey", render.OnOff(&v))
			want := []nlRequest{{"0x1407", "NLM_F_REQUEST|NLM_F_ACK", []byte{5, 0, 96, 0, map[bool]byte{true: 1, false: 0}[v], 0, 0, 0}}}
			if code != 0 || errs != "" || fmt.Sprint(ours) != fmt.Sprint(want) {
				t.Errorf("privileged-qkey %v: exit %d %q, request %v, want %v", v, code, errs, ours, want)
			}
		}
	} else {
		ours, code, _ := traced(t, bin, "system", "set", "privileged-qkey", "on")
		if code != cmdutil.ExitUnsupported || len(ours) != 0 {
			t.Errorf("privileged-qkey on a kernel without it: exit %d, requests %v; want exit 5 and none", code, ours)
		}
	}
}

// TestVMWritesNonRoot: without CAP_NET_ADMIN every write fails in one line
// naming the capability, exit 4, and nothing changes.
func TestVMWritesNonRoot(t *testing.T) {
	addNetns(t, "wrnobody")
	state := func() string {
		return vmRun(t, "rdma", "-d", "dev", "show") + vmRun(t, "rdma", "link", "show") + vmRun(t, "rdma", "system", "show") +
			vmRun(t, "rdma", "statistic", "qp", "mode")
	}
	before := state()
	nobody := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
	for _, args := range [][]string{
		{"link", "add", "rxew5", "type", "rxe", "netdev", "vrxe0"},
		{"link", "delete", "rxe1"},
		{"dev", "set", "rxe0", "name", "rxew5"},
		{"dev", "set", "rxe0", "netns", "wrnobody"},
		{"dev", "set", "rxe0", "adaptive-moderation", "on"},
		{"system", "set", "netns", "exclusive"},
		{"system", "set", "privileged-qkey", "on"},
		{"statistic", "qp", "set", "link", "rxe0/1", "auto", "type", "on"},
		{"statistic", "qp", "bind", "link", "rxe0/1", "lqpn", "1"},
		{"statistic", "qp", "unbind", "link", "rxe0/1", "cntn", "1"},
		{"statistic", "set", "link", "rxe0/1", "optional-counters", "rdma_sends"},
		{"statistic", "unset", "link", "rxe0/1", "optional-counters"},
	} {
		out, errs, code := runBin(t, nobody, args...)
		if code != cmdutil.ExitPermission || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "CAP_NET_ADMIN") {
			t.Errorf("as nobody: %s: exit %d, stdout %q, stderr %q; want exit 4 and one line naming CAP_NET_ADMIN", strings.Join(args, " "), code, out, errs)
		}
	}
	if after := state(); after != before {
		t.Fatalf("writes without CAP_NET_ADMIN changed the system:\nbefore\n%s\nafter\n%s", before, after)
	}
}
