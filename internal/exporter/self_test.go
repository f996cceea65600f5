package exporter

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/promtext"
)

// TestProcessMetrics: this process's figures, against what the kernel
// says through other files.
func TestProcessMetrics(t *testing.T) {
	start := time.Now().Add(-time.Minute)
	got := map[string]float64{}
	for _, m := range append(ProcessMetrics(start), GoMetrics()...) {
		got[m.Desc.Name()] = m.Value
	}
	var b bytes.Buffer
	if err := promtext.Write(&b, append(ProcessMetrics(start), GoMetrics()...)); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"go_goroutines", "go_info", "process_cpu_seconds_total", "process_resident_memory_bytes",
		"process_virtual_memory_bytes", "process_open_fds", "process_max_fds", "process_start_time_seconds"} {
		if _, ok := got[n]; !ok {
			t.Errorf("no %s in\n%s", n, b.String())
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			// both read a moment apart: within 25%
			if r := got["process_resident_memory_bytes"] / (kb * 1024); r < 0.75 || r > 1.25 {
				t.Errorf("RSS %v bytes, status says %v kB", got["process_resident_memory_bytes"], kb)
			}
		}
	}
	ents, _ := os.ReadDir("/proc/self/fd")
	if d := got["process_open_fds"] - float64(len(ents)-1); d < -2 || d > 2 {
		t.Errorf("open fds %v, /proc/self/fd has %d", got["process_open_fds"], len(ents)-1)
	}
	if got["process_cpu_seconds_total"] <= 0 || got["go_goroutines"] < 1 || got["process_start_time_seconds"] != float64(start.UnixNano())/1e9 {
		t.Errorf("%v", got)
	}
}

// FuzzParseStatm: any statm text gives sizes with rss <= vsz, or an error.
func FuzzParseStatm(f *testing.F) {
	for _, s := range []string{"5826 1763 1100 275 0 2296 0\n", "1 2", "", "x y", "18446744073709551615 1", "-1 0", "3 3 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vsz, rss, err := ParseStatm(s, 4096)
		if err == nil && (rss > vsz || vsz%4096 != 0) {
			t.Fatalf("%q: vsz %d rss %d", s, vsz, rss)
		}
	})
}

func TestParseStatm(t *testing.T) {
	vsz, rss, err := ParseStatm("5826 1763 1100 275 0 2296 0\n", 4096)
	if err != nil || vsz != 5826*4096 || rss != 1763*4096 {
		t.Errorf("%d %d %v", vsz, rss, err)
	}
	for _, s := range []string{"", "1", "a 1", "1 a", "1 2", "18446744073709551615 1"} {
		if _, _, err := ParseStatm(s, 4096); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
