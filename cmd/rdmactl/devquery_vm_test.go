//go:build vmtest

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// ibvDevice is one device of `ibv_devinfo -v`: its key/value lines (nested
// blocks as "block.key"), the flag names listed under a key, and its ports.
type ibvDevice struct {
	name  string
	vals  map[string]string
	flags map[string][]string
	ports []ibvPort
}

type ibvPort struct {
	vals map[string]string
	gids map[string]string // "0" -> "fe80::..., RoCE v2"
}

var ibvGIDLine = regexp.MustCompile(`^GID\[\s*(\d+)\]$`)

// parseIbvDevinfo reads ibv_devinfo -v output (rdma-core
// libibverbs/examples/devinfo.c): tab-indented "key:<tabs>value" lines,
// flag names on lines of their own under the key, "port:" blocks, and a
// few "X not supported" sentences.
func parseIbvDevinfo(t *testing.T, out string) []*ibvDevice {
	var devs []*ibvDevice
	var d *ibvDevice
	var p *ibvPort
	last, block := "", ""
	for _, raw := range strings.Split(out, "\n") {
		depth := len(raw) - len(strings.TrimLeft(raw, "\t"))
		line := strings.TrimSpace(raw)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "hca_id:") {
			d = &ibvDevice{name: strings.TrimSpace(strings.TrimPrefix(line, "hca_id:")),
				vals: map[string]string{}, flags: map[string][]string{}}
			devs = append(devs, d)
			p, last, block = nil, "", ""
			continue
		}
		if d == nil {
			t.Fatalf("ibv_devinfo: line before hca_id: %q", raw)
		}
		k, v, hasColon := strings.Cut(line, ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case hasColon && k == "port" && depth == 2:
			d.ports = append(d.ports, ibvPort{vals: map[string]string{"port": v}, gids: map[string]string{}})
			p = &d.ports[len(d.ports)-1]
		case hasColon && p != nil:
			if m := ibvGIDLine.FindStringSubmatch(k); m != nil {
				p.gids[m[1]] = v
			} else {
				p.vals[k] = v
				last = "port." + k
			}
		case hasColon:
			if depth == 1 {
				block = ""
				if v == "" {
					block = k
				}
			} else if depth == 2 && block != "" {
				k = block + "." + k
			}
			if v != "" {
				d.vals[k] = v
			}
			last = k
		case line == "completion_timestamp_mask not supported":
			d.vals["completion_timestamp_mask"] = "0"
		case line == "core clock not supported":
			d.vals["hca_core_clock"] = "0"
		case line == "tag matching not supported":
			d.vals["max_num_tags"] = "0"
		case p != nil:
			t.Fatalf("ibv_devinfo: unexpected port line %q", raw)
		default: // a flag name under the last key
			d.flags[last] = append(d.flags[last], line)
		}
	}
	return devs
}

var nameNum = regexp.MustCompile(`^(.*) \((\d+)\)$`)

// checkValue compares an ibv_devinfo value with our JSON object's key:
// "NAME (n)" against key (n) and key_name (NAME); 0x... and decimal
// numbers against the number; anything else as a string.
func checkValue(t *testing.T, where, key, ibv string, ours map[string]any) {
	t.Helper()
	got, ok := ours[key]
	if !ok {
		t.Errorf("%s: rdmactl has no %q (ibv_devinfo: %q)", where, key, ibv)
		return
	}
	if m := nameNum.FindStringSubmatch(ibv); m != nil {
		if fmt.Sprint(got) != m[2] || fmt.Sprint(ours[key+"_name"]) != m[1] {
			t.Errorf("%s: %s: ibv_devinfo %q, rdmactl %v / %q", where, key, ibv, got, ours[key+"_name"])
		}
		return
	}
	if n, ok := got.(json.Number); ok {
		want, err := parseIbvNumber(ibv)
		if err != nil {
			t.Errorf("%s: %s: ibv_devinfo %q is not a number: %v", where, key, ibv, err)
			return
		}
		if n.String() != strconv.FormatUint(want, 10) {
			t.Errorf("%s: %s: ibv_devinfo %q (%d), rdmactl %s", where, key, ibv, want, n)
		}
		return
	}
	if fmt.Sprint(got) != ibv {
		t.Errorf("%s: %s: ibv_devinfo %q, rdmactl %q", where, key, ibv, got)
	}
}

func parseIbvNumber(s string) (uint64, error) {
	s = strings.TrimSuffix(s, "kHZ")
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

// ibvOnly are ibv_devinfo keys with no rdmactl counterpart: they come from
// provider (mlx5) data this command does not request, or from newer
// libibverbs verbs.
var ibvOnly = map[string]bool{
	"tso_caps.max_tso": true, "rss_caps.rx_hash_function": true, "rss_caps.rx_hash_fields_mask": true,
	"packet_pacing_caps.qp_rate_limit_min": true, "packet_pacing_caps.qp_rate_limit_max": true,
	"max_comp_cntr": true, "port.effective_speed": true,
}

// ibvRenamed maps ibv_devinfo keys to rdmactl's.
var ibvRenamed = map[string]string{
	"rss_caps.max_rwq_indirection_tables":     "",
	"rss_caps.max_rwq_indirection_table_size": "",
	"completion timestamp_mask":               "completion_timestamp_mask",
	"maximum available device memory":         "max_dm_size",
}

// TestVMDevQueryMatchesIbvDevinfo compares `rdmactl -j dev query` with
// `ibv_devinfo -v` field by field, for every device and port, and checks
// that rdma res show is unchanged afterwards.
func TestVMDevQueryMatchesIbvDevinfo(t *testing.T) {
	resBefore := dqRun(t, "rdma", "-j", "res", "show")
	ibv := parseIbvDevinfo(t, dqRun(t, "ibv_devinfo", "-v"))
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
		for k, v := range d.vals {
			key := k
			if r, ok := ibvRenamed[k]; ok {
				if r != "" {
					key = r
				}
			}
			if ibvOnly[k] {
				continue
			}
			obj := o
			if b, sub, nested := strings.Cut(key, "."); nested {
				obj, _ = o[b].(map[string]any)
				key = sub
				if obj == nil {
					t.Errorf("%s: rdmactl has no block %q", d.name, b)
					continue
				}
			}
			if key == "max_num_tags" {
				obj, _ = o["tm_caps"].(map[string]any)
			}
			if key == "max_dm_size" {
				v = strings.TrimSuffix(v, "Bytes")
			}
			checkValue(t, d.name, key, v, obj)
			compared++
		}
		for k, names := range d.flags {
			switch k {
			case "rc_odp_caps", "uc_odp_caps", "ud_odp_caps", "xrc_odp_caps":
				if len(names) == 1 && names[0] == "NO SUPPORT" {
					names = []string{}
				}
			case "device_cap_flags_ex":
				// ibv_devinfo names only the bits above 31; ours repeat
				// the low ones: check inclusion.
				have := strings.Join(namesOf(o[k+"_names"]), "\n")
				for _, n := range names {
					if !strings.Contains("\n"+have+"\n", "\n"+n+"\n") {
						t.Errorf("%s: %s: ibv_devinfo flag %q missing in %v", d.name, k, n, have)
					}
				}
				compared++
				continue
			}
			if got := namesOf(o[k+"_names"]); strings.Join(got, ",") != strings.Join(names, ",") {
				t.Errorf("%s: %s names: ibv_devinfo %v, rdmactl %v", d.name, k, names, got)
			}
			compared++
		}
		// ODP keys with nothing listed (general_odp_caps on rxe).
		if _, ok := d.flags["general_odp_caps"]; !ok && len(namesOf(o["general_odp_caps_names"])) != 0 {
			t.Errorf("%s: general_odp_caps: ibv_devinfo lists none, rdmactl %v", d.name, o["general_odp_caps_names"])
		}

		ports, _ := o["ports"].([]any)
		if len(ports) != len(d.ports) {
			t.Errorf("%s: %d ports, ibv_devinfo %d", d.name, len(ports), len(d.ports))
			continue
		}
		for i, ip := range d.ports {
			op, _ := ports[i].(map[string]any)
			where := fmt.Sprintf("%s port %s", d.name, ip.vals["port"])
			for k, v := range ip.vals {
				if ibvOnly["port."+k] {
					continue
				}
				if k == "link_layer" {
					k = "link_layer_name"
				}
				checkValue(t, where, k, v, op)
				compared++
			}
			var ours []string
			gl, _ := op["gids"].([]any)
			for _, g := range gl {
				gm := g.(map[string]any)
				ours = append(ours, fmt.Sprintf("%s=%s, %s", gm["index"], gm["gid"], gm["type"]))
			}
			var theirs []string
			for idx, v := range ip.gids {
				theirs = append(theirs, idx+"="+v)
			}
			sort.Strings(ours)
			sort.Strings(theirs)
			if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
				t.Errorf("%s: GIDs:\nibv_devinfo %v\nrdmactl     %v", where, theirs, ours)
			}
			compared += len(theirs)
		}
	}
	t.Logf("compared %d values and flag lists for %d devices", compared, len(ibv))
	if compared < 2*70 {
		t.Errorf("only %d values compared: the parser lost fields", compared)
	}
	if after := dqRun(t, "rdma", "-j", "res", "show"); after != resBefore {
		t.Errorf("rdma -j res show changed:\nbefore %s\nafter  %s", resBefore, after)
	}

	// The table form names the same values; spot-check it and the port filter.
	stdout, stderr, code = runCmd(t, "dev", "query", "rxe0", "--port", "1")
	if code != 0 || !strings.Contains(stdout, "PORT_ACTIVE (4)") || !strings.Contains(stdout, "RoCE v2") {
		t.Errorf("dev query rxe0 --port 1: exit %d\n%s%s", code, stdout, stderr)
	}
	_, stderr, code = runCmd(t, "dev", "query", "rxe0/2")
	if code != exitNotFound || strings.Count(stderr, "\n") != 1 {
		t.Errorf("rxe0/2: exit %d, stderr %q", code, stderr)
	}
	_, stderr, code = runCmd(t, "dev", "query", "nosuch0")
	if code != exitNotFound || !strings.Contains(stderr, "rxe0") {
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
