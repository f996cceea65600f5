//go:build vmtest

package main

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestVMPerfDeviceNeeds: -c XRC, -O and --ph are refused once the device
// is known, exit 5, in one line saying what the device or kernel lacks:
// rxe has no XRC capability and one port (as ibv_devinfo -v reports
// them), and Debian's kernels have no DMA handles. Server and client
// alike, before any exchange; nothing stays in the kernel.
func TestVMPerfDeviceNeeds(t *testing.T) {
	resUnchanged(t, false)
	out, err := exec.Command("ibv_devinfo", "-v", "-d", "rxe0").Output()
	if err != nil {
		t.Fatalf("ibv_devinfo -v -d rxe0: %v", err)
	}
	m := regexp.MustCompile(`device_cap_flags:\s*0x([0-9a-fA-F]+)`).FindSubmatch(out)
	p := regexp.MustCompile(`phys_port_cnt:\s*([0-9]+)`).FindSubmatch(out)
	if m == nil || p == nil {
		t.Fatalf("ibv_devinfo -v -d rxe0 has no device_cap_flags or phys_port_cnt:\n%s", out)
	}
	caps, _ := strconv.ParseUint(string(m[1]), 16, 64)
	ports, _ := strconv.Atoi(string(p[1]))
	if caps&(1<<20) != 0 || ports != 1 {
		t.Fatalf("rxe0: device_cap_flags %#x (XRC is bit 20), %d ports: the test expects rxe without XRC, with one port", caps, ports)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "XRC"}, "-c XRC: rxe0 has no XRC (its device capabilities lack it); run with -c RC"},
		{[]string{"-O"}, "-O: rxe0 has 1 port; a dual-port run uses ports 1 and 2 of one device"},
		{[]string{"--tph_mem", "pm", "--cpu_id", "0", "--ph", "0"}, "--ph: this kernel has no DMA handles for rxe0"},
	} {
		for _, host := range [][]string{nil, {"10.77.0.1"}} {
			args := append(append([]string{"perf", "write", "-d", "rxe0", "-p", "24800"}, c.args...), host...)
			sout, serr, code := runBin(t, nil, args...)
			if code != 5 || sout != "" || strings.Count(serr, "\n") != 1 || !strings.Contains(serr, c.want) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 5 and %q", args, code, sout, serr, c.want)
			}
		}
	}
}
