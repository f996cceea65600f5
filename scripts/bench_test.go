// Package scripts holds tests of the repository's shell scripts; the
// scripts themselves are not Go.
package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bench-perftest.sh --table: the "fast kernel" rows keep only the rounds
// in which both tools' kernel path was at most 1.25 times the fastest run's.
func TestBenchPerftestFastKernelRows(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	// Four rounds; the fastest kernel path is 20 us, so the band is 25.
	// Round 2 is slow for perftest, round 3 for rdmactl: rounds 1 and 4
	// remain. Latency rows: bytes iters min max typical avg stdev p99 p99.9.
	files := map[string]string{
		"perftest-kpath-2": "20.0 2000\n40.0 2000\n21.0 2000\n24.0 2000\n",
		"rdmactl-kpath-2":  "22.0 2000\n23.0 2000\n30.0 2000\n25.0 2000\n",
		"perftest-lat-2":   "2 1000 1 9 10.00 1 1 100.00 1\n2 1000 1 9 99.00 1 1 900.00 1\n2 1000 1 9 99.00 1 1 900.00 1\n2 1000 1 9 12.00 1 1 120.00 1\n",
		"rdmactl-lat-2":    "2 1000 1 9 11.00 1 1 90.00 1\n2 1000 1 9 99.00 1 1 900.00 1\n2 1000 1 9 99.00 1 1 900.00 1\n2 1000 1 9 11.00 1 1 130.00 1\n",
		// From -U samples: median p99 n.
		"perftest-latu-2": "10.000 100.000 999\n99 900 999\n99 900 999\n12.000 120.000 999\n",
		"rdmactl-latu-2":  "11.000 90.000 999\n99 900 999\n99 900 999\n11.000 130.000 999\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("bash", "bench-perftest.sh", "--table", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("--table: %v\n%s", err, out)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, ", fast kernel"); i > 0 {
			rows[strings.TrimSpace(l[:i+len(", fast kernel")])] = strings.Fields(l[i+len(", fast kernel"):])
		}
	}
	// Columns after the label: perftest rdmactl ratio paired wins ...
	want := map[string][]string{
		"lat median 2 B, fast kernel":          {"11", "11", "1.000", "1.008", "1/2"},
		"lat p99 2 B, fast kernel":             {"110", "110", "1.000", "0.992", "1/2"},
		"lat median 2 B, samples, fast kernel": {"11", "11", "1.000", "1.008", "1/2"},
		"lat p99 2 B, samples, fast kernel":    {"110", "110", "1.000", "0.992", "1/2"},
	}
	for label, w := range want {
		got := rows[label]
		if len(got) < len(w) {
			t.Errorf("%s: row %q missing or short in:\n%s", label, got, out)
			continue
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("%s: column %d = %s, want %s (row %q)", label, i+1, got[i], w[i], got)
			}
		}
	}
	if _, ok := rows["lat median 4 KiB, fast kernel"]; ok {
		t.Errorf("a 4 KiB fast-kernel row without 4 KiB rounds:\n%s", out)
	}
}

// bench-perftest.sh's samplestats: the median and the nearest-rank p99 of
// the -U samples in a client's output, perftest's or rdmactl's.
func TestBenchPerftestSampleStats(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct {
		n    int
		want string
	}{
		{999, "500.000 990.000 999"}, // p99: the 990th of 999 (perftest prints its 989th)
		{200, "100.500 198.000 200"},
		{1, "1.000 1.000 1"},
		{0, "0 0 0"},
	} {
		var b strings.Builder
		b.WriteString(" #bytes #iterations ...\n#, usec\n")
		for i := 0; i < c.n; i++ { // in a scrambled order, as taken
			fmt.Fprintf(&b, "%d, %d\n", i+1, (i*7919)%c.n+1)
		}
		b.WriteString("---------------------------------------------------------------------------------------\n #bytes #iterations\n 2 1000 1 2 3\n")
		cmd := exec.Command("bash", "bench-perftest.sh", "--samplestats")
		cmd.Stdin = strings.NewReader(b.String())
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != c.want {
			t.Errorf("%d samples: %q (%v), want %q", c.n, out, err, c.want)
		}
	}
}
