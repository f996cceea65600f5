//go:build vmtest

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"golang.org/x/sys/unix"
)

// ibvDevice is one device of `ibv_devinfo -v`: every line that states a
// fact, in order, and its ports. vals holds the key/value facts by key
// (GIDs as "GID[n]"), for tests that want a few of them.
type ibvDevice struct {
	name    string
	entries []ibvEntry
	vals    map[string]string
	ports   []ibvPort
}

type ibvPort struct {
	num     string
	entries []ibvEntry
	vals    map[string]string // with "port"
}

func entryVals(es []ibvEntry) map[string]string {
	m := map[string]string{}
	for _, e := range es {
		if !e.isFlags {
			m[e.key] = e.val
		}
	}
	return m
}

// ibvEntry is one fact of ibv_devinfo -v: a "key: value" line (nested
// blocks as "block.key"), a flag list (the lines under a key with no
// value; possibly none), or one of its "... not supported" sentences.
type ibvEntry struct {
	key     string
	val     string
	isFlags bool
	flags   []string
	line    string // as printed, for messages
}

var ibvGIDLine = regexp.MustCompile(`^GID\[\s*(\d+)\]$`)

// ibvSentences are the lines ibv_devinfo prints instead of a key when a
// value is 0, with the key and value they stand for.
var ibvSentences = map[string][2]string{
	"completion_timestamp_mask not supported": {"completion_timestamp_mask", "0"},
	"core clock not supported":                {"hca_core_clock", "0"},
	"tag matching not supported":              {"tag_matching.max_num_tags", "0"},
}

// ibvTagMatching are the keys ibv_devinfo prints at the top level after
// max_rndv_hdr_size when the device does tag matching.
var ibvTagMatching = map[string]bool{"max_rndv_hdr_size": true, "max_num_tags": true, "max_ops": true, "max_sge": true, "flags": true}

// parseIbvDevinfo reads ibv_devinfo -v output (rdma-core
// libibverbs/examples/devinfo.c): "key:<tabs>value" lines indented by
// tabs, blocks ("rss_caps:") whose keys are one tab deeper, flag names on
// lines of their own five tabs deep, "port:" blocks, and a few
// sentences. A line it does not understand fails the test, so that no
// line goes unchecked.
func parseIbvDevinfo(t *testing.T, out string) []*ibvDevice {
	var devs []*ibvDevice
	var d *ibvDevice
	var p *ibvPort
	block, inTM := "", false
	add := func(e ibvEntry) *ibvEntry {
		l := &d.entries
		if p != nil {
			l = &p.entries
		}
		*l = append(*l, e)
		return &(*l)[len(*l)-1]
	}
	var last *ibvEntry // the entry flag lines attach to
	for _, raw := range strings.Split(out, "\n") {
		depth := len(raw) - len(strings.TrimLeft(raw, "\t"))
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "hca_id:") {
			d = &ibvDevice{name: strings.TrimSpace(strings.TrimPrefix(line, "hca_id:"))}
			devs = append(devs, d)
			p, last, block, inTM = nil, nil, "", false
			continue
		}
		if d == nil {
			t.Fatalf("ibv_devinfo: line before hca_id: %q", raw)
		}
		if depth == 5 { // a flag name under the last key
			if last == nil {
				t.Fatalf("ibv_devinfo: flag line under no key: %q", raw)
			}
			last.isFlags = true
			last.flags = append(last.flags, line)
			continue
		}
		if s, ok := ibvSentences[line]; ok && p == nil {
			add(ibvEntry{key: s[0], val: s[1], line: line})
			last = nil
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("ibv_devinfo: unexpected line %q", raw)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "port" && depth == 2:
			d.ports = append(d.ports, ibvPort{num: v})
			p, last = &d.ports[len(d.ports)-1], nil
			continue
		case p != nil:
			if depth != 3 {
				t.Fatalf("ibv_devinfo: unexpected port line %q", raw)
			}
			if m := ibvGIDLine.FindStringSubmatch(k); m != nil {
				k = "GID[" + m[1] + "]"
			}
		case depth == 1:
			block = ""
			if k == "max_rndv_hdr_size" {
				inTM = true
			} else if !ibvTagMatching[k] {
				inTM = false
			}
			if inTM {
				k = "tag_matching." + k
			}
		case depth == 2 && block != "":
			k = block + "." + k
		default:
			t.Fatalf("ibv_devinfo: unexpected line %q", raw)
		}
		e := add(ibvEntry{key: k, val: v, line: line})
		last = e
		if v == "" && depth == 1 {
			// A block or a flag list: which one, the next lines tell.
			block = k
			e.isFlags = true
		} else if v == "" && depth == 2 {
			e.isFlags = true
		}
	}
	// A key with no value followed by deeper keys was a block header,
	// not a flag list: drop it (its keys are the entries).
	prune := func(es []ibvEntry) []ibvEntry {
		out := es[:0]
		for _, e := range es {
			if e.isFlags && len(e.flags) == 0 && e.val == "" {
				header := false
				for _, f := range es {
					if strings.HasPrefix(f.key, e.key+".") {
						header = true
					}
				}
				if header {
					continue
				}
			}
			out = append(out, e)
		}
		return out
	}
	for _, d := range devs {
		d.entries = prune(d.entries)
		d.vals = entryVals(d.entries)
		for i := range d.ports {
			d.ports[i].vals = entryVals(d.ports[i].entries)
			d.ports[i].vals["port"] = d.ports[i].num
		}
	}
	return devs
}

// ibvToJSON maps an ibv_devinfo key to the path of its rdmactl -j key
// where they differ; flag lists are the path plus "_names".
var ibvToJSON = map[string]string{
	"completion timestamp_mask":        "completion_timestamp_mask",
	"maximum available device memory":  "max_dm_size",
	"raw packet caps":                  "raw_packet_caps",
	"tso_caps.supported_qp":            "tso_caps.supported_qpts",
	"rss_caps.supported_qp":            "rss_caps.supported_qpts",
	"packet_pacing_caps.supported_qp":  "packet_pacing_caps.supported_qpts",
	"tag_matching.max_rndv_hdr_size":   "tm_caps.max_rndv_hdr_size",
	"tag_matching.max_num_tags":        "tm_caps.max_num_tags",
	"tag_matching.max_ops":             "tm_caps.max_ops",
	"tag_matching.max_sge":             "tm_caps.max_sge",
	"tag_matching.flags":               "tm_caps.flags",
	"cq moderation caps.max_cq_count":  "cq_moderation_caps.max_cq_count",
	"cq moderation caps.max_cq_period": "cq_moderation_caps.max_cq_period",
	"link_layer":                       "link_layer_name",
}

// ibvUnits are the units ibv_devinfo glues to numbers.
var ibvUnits = []string{"kHZ", "Bytes", "kbps", " us"}

var nameNum = regexp.MustCompile(`^(.*) \((\d+)\)$`)

// lookupJSON walks a dotted path in a decoded rdmactl object: the object
// holding the last element and that element's name.
func lookupJSON(o map[string]any, path string) (map[string]any, string, bool) {
	parts := strings.Split(path, ".")
	for _, b := range parts[:len(parts)-1] {
		sub, ok := o[b].(map[string]any)
		if !ok {
			return nil, "", false
		}
		o = sub
	}
	k := parts[len(parts)-1]
	_, ok := o[k]
	return o, k, ok
}

// checkEntry compares one ibv_devinfo fact with rdmactl's JSON object:
// "NAME (n)" against key (n) and key_name (NAME); hex and decimal numbers
// (units stripped) against the number; flag lists against key_names,
// ibv_devinfo's "Unknown flags: 0xN" against the "0xN" entry and its
// "NO SUPPORT" against none; anything else as a string.
func checkEntry(t *testing.T, where string, e ibvEntry, o map[string]any) {
	t.Helper()
	path := e.key
	if r, ok := ibvToJSON[path]; ok {
		path = r
	}
	if e.isFlags && e.val != "" { // "device_cap_flags: 0x..." and its flags
		v := e
		v.isFlags = false
		checkEntry(t, where, v, o)
	}
	if e.isFlags {
		obj, k, ok := lookupJSON(o, path+"_names")
		if !ok {
			t.Errorf("%s: %q: rdmactl has no %s_names (ibv_devinfo lists %q)", where, e.line, path, e.flags)
			return
		}
		want := []string{}
		for _, f := range e.flags {
			if f == "NO SUPPORT" && len(e.flags) == 1 {
				continue
			}
			want = append(want, strings.TrimPrefix(f, "Unknown flags: "))
		}
		got := namesOf(obj[k])
		if path == "device_cap_flags_ex" {
			// ibv_devinfo names only the bits above 31; rdmactl repeats
			// the low ones (as device_cap_flags_names) and its unknown
			// entry covers all 64 bits.
			var high []string
			for _, n := range got {
				if strings.HasPrefix(n, "0x") {
					v, _ := strconv.ParseUint(n[2:], 16, 64)
					if v >>= 32; v != 0 {
						high = append(high, fmt.Sprintf("0x%X", v<<32))
					}
				} else if !slices.Contains(namesOf(o["device_cap_flags_names"]), n) {
					high = append(high, n)
				}
			}
			got = high
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %s flags: ibv_devinfo %q, rdmactl %q", where, e.key, e.flags, got)
		}
		return
	}
	obj, key, ok := lookupJSON(o, path)
	if !ok {
		t.Errorf("%s: %q: rdmactl has no %s", where, e.line, path)
		return
	}
	got, ibv := obj[key], e.val
	if m := nameNum.FindStringSubmatch(ibv); m != nil {
		if fmt.Sprint(got) != m[2] || fmt.Sprint(obj[key+"_name"]) != m[1] {
			t.Errorf("%s: %q: rdmactl %s %v / %q", where, e.line, path, got, obj[key+"_name"])
		}
		return
	}
	if n, ok := got.(json.Number); ok {
		for _, u := range ibvUnits {
			ibv = strings.TrimSuffix(ibv, u)
		}
		want, err := parseIbvNumber(ibv)
		if err != nil {
			t.Errorf("%s: %q: not a number: %v", where, e.line, err)
			return
		}
		if n.String() != strconv.FormatUint(want, 10) {
			t.Errorf("%s: %q (%d): rdmactl %s %s", where, e.line, want, path, n)
		}
		return
	}
	if fmt.Sprint(got) != ibv {
		t.Errorf("%s: %q: rdmactl %s %q", where, e.line, path, got)
	}
}

func parseIbvNumber(s string) (uint64, error) {
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return strconv.ParseUint(s[2:], 16, 64)
	}
	return strconv.ParseUint(s, 10, 64)
}

func namesOf(v any) []string {
	out := []string{}
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// tableFlags reads rdmactl's table (dev query without -j): the flag lines
// under each key, by dotted path as ibv_devinfo's (two spaces a level).
func tableFlags(out string) map[string]map[string][]string {
	devs := map[string]map[string][]string{}
	var cur map[string][]string
	var block [8]string
	last := ""
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "hca_id: "); ok {
			cur = map[string][]string{}
			devs[name] = cur
			continue
		}
		if cur == nil || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasPrefix(line, strings.Repeat(" ", 33)) {
			cur[last] = append(cur[last], strings.TrimSpace(line))
			continue
		}
		lvl := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		k, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		if lvl < 1 || lvl >= len(block) {
			continue
		}
		block[lvl] = k
		last = strings.Join(block[1:lvl+1], ".")
	}
	return devs
}

// ibvToTable maps ibv_devinfo flag keys to the table's where they differ.
var ibvToTable = map[string]string{"raw packet caps": "raw_packet_caps", "tag_matching.flags": ""}

// TestVMDevQueryMatchesIbvDevinfo checks that every fact `ibv_devinfo -v`
// prints (every device, every port, the nested blocks, every flag line)
// has its counterpart with the same value in `rdmactl -j dev query`, and
// every flag line in the table form too; and that rdma res show is
// unchanged afterwards. A line of ibv_devinfo the test cannot place fails
// it: nothing is skipped.
func TestVMDevQueryMatchesIbvDevinfo(t *testing.T) {
	resBefore := dqRun(t, "rdma", "-j", "res", "show")
	ibvOut := dqRun(t, "ibv_devinfo", "-v")
	ibv := parseIbvDevinfo(t, ibvOut)
	if len(ibv) < 2 {
		t.Fatalf("ibv_devinfo -v lists %d devices, want rxe0 and rxe1", len(ibv))
	}
	stdout, stderr, code := runCmd(t, "-j", "dev", "query")
	if code != 0 {
		t.Fatalf("rdmactl -j dev query: exit %d: %s", code, stderr)
	}
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.UseNumber()
	var ours []map[string]any
	if err := dec.Decode(&ours); err != nil {
		t.Fatalf("rdmactl -j dev query: %v\n%s", err, stdout)
	}
	table, stderr, code := runCmd(t, "dev", "query")
	if code != 0 {
		t.Fatalf("rdmactl dev query: exit %d: %s", code, stderr)
	}
	tflags := tableFlags(table)
	byName := map[string]map[string]any{}
	for _, o := range ours {
		byName[fmt.Sprint(o["ifname"])] = o
	}
	compared := 0
	for _, d := range ibv {
		o, ok := byName[d.name]
		if !ok {
			t.Errorf("rdmactl does not list %s", d.name)
			continue
		}
		for _, e := range d.entries {
			checkEntry(t, d.name, e, o)
			compared++
			if !e.isFlags {
				continue
			}
			tk := e.key
			if r, ok := ibvToTable[tk]; ok {
				tk = r
			}
			if tk == "" { // the table prints tag matching flags on one line
				continue
			}
			have, ok := tflags[d.name][tk]
			if !ok && len(e.flags) > 0 {
				t.Errorf("%s: table: no flag lines under %s (ibv_devinfo %q)", d.name, tk, e.flags)
			}
			for _, f := range e.flags {
				if !slices.Contains(have, f) {
					t.Errorf("%s: table: %s lacks %q (it has %q)", d.name, tk, f, have)
				}
			}
		}
		ports, _ := o["ports"].([]any)
		if len(ports) != len(d.ports) {
			t.Errorf("%s: %d ports, ibv_devinfo %d", d.name, len(ports), len(d.ports))
			continue
		}
		for i, ip := range d.ports {
			op, _ := ports[i].(map[string]any)
			where := fmt.Sprintf("%s port %s", d.name, ip.num)
			if fmt.Sprint(op["port"]) != ip.num {
				t.Errorf("%s: rdmactl's port %d is %v", where, i, op["port"])
			}
			gids := map[string]string{}
			gl, _ := op["gids"].([]any)
			for _, g := range gl {
				gm, _ := g.(map[string]any)
				gids[fmt.Sprint(gm["index"])] = fmt.Sprintf("%s, %s", gm["gid"], gm["type"])
			}
			nGIDs := 0
			for _, e := range ip.entries {
				compared++
				if idx, ok := strings.CutPrefix(e.key, "GID["); ok {
					idx = strings.TrimSuffix(idx, "]")
					nGIDs++
					if gids[idx] != e.val {
						t.Errorf("%s: %q: rdmactl GID %s is %q", where, e.line, idx, gids[idx])
					}
					continue
				}
				checkEntry(t, where, e, op)
			}
			if nGIDs != len(gids) {
				t.Errorf("%s: ibv_devinfo lists %d GIDs, rdmactl %d: %v", where, nGIDs, len(gids), gids)
			}
		}
	}
	t.Logf("compared %d ibv_devinfo facts for %d devices", compared, len(ibv))
	if compared < 2*75 {
		t.Errorf("only %d facts compared: the parser lost lines", compared)
	}
	if t.Failed() {
		t.Logf("ibv_devinfo -v:\n%s", ibvOut)
	}
	if after := dqRun(t, "rdma", "-j", "res", "show"); after != resBefore {
		t.Errorf("rdma -j res show changed:\nbefore %s\nafter  %s", resBefore, after)
	}

	// The port filter and the errors.
	stdout, stderr, code = runCmd(t, "dev", "query", "rxe0", "--port", "1")
	if code != 0 || !strings.Contains(stdout, "PORT_ACTIVE (4)") || !strings.Contains(stdout, "RoCE v2") {
		t.Errorf("dev query rxe0 --port 1: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = runCmd(t, "dev", "query", "rxe0/2")
	if code != cmdutil.ExitNotFound || strings.Count(stderr, "\n") != 1 {
		t.Errorf("rxe0/2: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCmd(t, "dev", "query", "nosuch0")
	if code != cmdutil.ExitNotFound || !strings.Contains(stderr, "rxe0") {
		t.Errorf("nosuch0: exit %d, stderr %q", code, stderr)
	}
}

func dqRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v: %s (the VM must provide it)", name, args, err, stderr.String())
	}
	return string(out)
}

// TestVMDevQueryPermission runs `rdmactl dev query rxe0` as user nobody
// with the node at mode 0600: exit 4 and one line naming the node.
func TestVMDevQueryPermission(t *testing.T) {
	if os.Getenv("RDMACTL_DQ_HELPER") == "1" {
		return // the child's run happens in TestVMDevQueryPermissionChild
	}
	const node = "/dev/infiniband/uverbs0" // rxe0 in the VM (checked below)
	if ib, err := os.ReadFile("/sys/class/infiniband_verbs/uverbs0/ibdev"); err != nil || strings.TrimSpace(string(ib)) != "rxe0" {
		t.Fatalf("uverbs0 is not rxe0: %q %v", ib, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(node, 0o600); err != nil {
		t.Fatal(err)
	}
	defer unix.Chmod(node, st.Mode&0o7777)
	cmd := exec.Command(os.Args[0], "-test.run=^TestVMDevQueryPermissionChild$")
	cmd.Env = append(os.Environ(), "RDMACTL_DQ_HELPER=1")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	if !strings.Contains(string(out), "exit=4 ") || !strings.Contains(string(out), node) || !strings.Contains(string(out), "lines=1") {
		t.Errorf("want exit 4 and one line naming %s, got:\n%s", node, out)
	}
}

// TestVMDevQueryPermissionChild is the child of TestVMDevQueryPermission;
// it does nothing unless started by it.
func TestVMDevQueryPermissionChild(t *testing.T) {
	if os.Getenv("RDMACTL_DQ_HELPER") != "1" {
		return
	}
	_, stderr, code := runCmd(t, "dev", "query", "rxe0")
	fmt.Printf("exit=%d lines=%d stderr=%s", code, strings.Count(stderr, "\n"), stderr)
}
