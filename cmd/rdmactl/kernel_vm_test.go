//go:build vmtest

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// binJSON runs the rdmactl binary the suite built (RDMACTL_BIN: a process
// of its own, so that each run probes the kernel afresh) with extra
// environment, and decodes its JSON.
func binJSON(t *testing.T, env []string, args ...string) any {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v %s: %v", env, strings.Join(args, " "), err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return v
}

// TestVMKernelFeatures: `version -d` probes every feature on this kernel
// (none unknown: the VM has devices and RDMA netlink), and each feature
// forced absent (what an older kernel lacks) leaves the commands' output
// as it was, except the facts only the missing method gives.
func TestVMKernelFeatures(t *testing.T) {
	v := binJSON(t, nil, "-j", "version", "-d").(map[string]any)
	k := v["kernel"].(map[string]any)
	if k["probed_device"] == "" || k["release"] == "" {
		t.Fatalf("version -d: %v", k)
	}
	states := map[string]string{}
	for _, f := range k["features"].([]any) {
		f := f.(map[string]any)
		st := f["state"].(string)
		if st != "present" && st != "absent" {
			t.Errorf("%s: state %q (%v), want present or absent", f["name"], st, f["detail"])
		}
		states[f["name"].(string)] = st
	}
	t.Logf("kernel %s: %v", k["release"], states)
	// Every uverbs method rdmactl uses exists on Debian's 6.1 and 6.12:
	// forcing them absent is what stands in for older kernels.
	for _, n := range []string{"uverbs_ioctl", "get_context_ioctl", "query_port_ioctl", "query_gid_table", "nldev_sys"} {
		if states[n] != "present" {
			t.Errorf("%s is %s on this kernel", n, states[n])
		}
	}

	cmds := [][]string{{"-j", "gids"}, {"-j", "dev", "query", "rxe0"}, {"-j", "dev", "show"}, {"-j", "link", "show"}}
	// The unforced answers, kept encoded: each comparison drops keys
	// from a fresh copy.
	base := make([][]byte, len(cmds))
	for i, c := range cmds {
		base[i], _ = json.Marshal(binJSON(t, nil, c...))
	}
	for _, absent := range []string{"uverbs_ioctl", "get_context_ioctl", "query_port_ioctl", "query_gid_table", "nldev_sys", "all"} {
		env := []string{"RDMACTL_KERNEL_ABSENT=" + absent}
		v := binJSON(t, env, "-j", "version", "-d").(map[string]any)
		for _, f := range v["kernel"].(map[string]any)["features"].([]any) {
			f := f.(map[string]any)
			if (absent == "all" || f["name"] == absent) && f["state"] != "forced_absent" {
				t.Errorf("%s: %s is %v, want forced_absent", env[0], f["name"], f["state"])
			}
		}
		for i, c := range cmds {
			got := binJSON(t, env, c...)
			var want any
			if err := json.Unmarshal(base[i], &want); err != nil {
				t.Fatal(err)
			}
			// Only the ioctl's QUERY_PORT answer has active_speed_ex and
			// port_cap_flags2; only SYS_GET has the netns mode.
			if absent == "uverbs_ioctl" || absent == "query_port_ioctl" || absent == "all" {
				dropKeys(got, "active_speed_ex", "port_cap_flags2", "port_cap_flags2_names", "active_speed", "active_speed_name")
				dropKeys(want, "active_speed_ex", "port_cap_flags2", "port_cap_flags2_names", "active_speed", "active_speed_name")
			}
			if absent == "nldev_sys" || absent == "all" {
				dropKeys(got, "netns_mode")
				dropKeys(want, "netns_mode")
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("%s rdmactl %s:\n got  %s\n want %s", env[0], strings.Join(c, " "), g, w)
			}
		}
	}
}

// dropKeys deletes keys from every object in v, at any depth.
func dropKeys(v any, keys ...string) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range keys {
			delete(x, k)
		}
		for _, e := range x {
			dropKeys(e, keys...)
		}
	case []any:
		for _, e := range x {
			dropKeys(e, keys...)
		}
	}
}

// kernelSeries61 says whether the VM runs Debian's 6.1 series: the tests
// that split work between the two series CI runs (vm/vmtest: 6.1, 6.12)
// ask it. Not a probe of what the kernel offers: only where a run goes.
func kernelSeries61() bool {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return false
	}
	return strings.HasPrefix(unix.ByteSliceToString(uts.Release[:]), "6.1.")
}
