//go:build vmtest

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// meshReport is the part of perf mesh -j's report the tests read.
type meshReport struct {
	Unit   string  `json:"unit"`
	Median float64 `json:"median"`
	Failed int     `json:"failed"`
	Tests  []struct {
		Src    struct{ Host, Device string } `json:"src"`
		Dst    struct{ Host, Device string } `json:"dst"`
		Figure *float64                      `json:"figure"`
		Error  string                        `json:"error"`
	} `json:"tests"`
}

// runMesh starts one process a rank of a --hosts job on this VM (rank r
// tests device rxe<r>) and returns rank 0's report and every rank's exit.
func runMesh(t *testing.T, ranks int, extra ...string) (*meshReport, []error, []string) {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	var hb bytes.Buffer
	for range ranks {
		hb.WriteString("127.0.0.1\n")
	}
	if err := os.WriteFile(hosts, hb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	errs := make([]error, ranks)
	logs := make([]string, ranks)
	var out0 bytes.Buffer
	done := make(chan int, ranks)
	for r := range ranks {
		args := append([]string{"-j", "perf", "mesh", "write", "--hosts", hosts, "--rank", strconv.Itoa(r),
			"--devices", "rxe" + strconv.Itoa(r), "--coordinator", "127.0.0.1:18600", "-D", "2", "--join-timeout", "60s"}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if r == 0 {
			cmd.Stdout = &out0
		}
		go func() {
			errs[r] = cmd.Run()
			logs[r] = e.String()
			done <- r
		}()
	}
	for range ranks {
		<-done
	}
	var rep meshReport
	if err := json.Unmarshal(out0.Bytes(), &rep); err != nil {
		t.Fatalf("rank 0's report: %v\n%s\nlogs %q", err, out0.String(), logs)
	}
	return &rep, errs, logs
}

// TestVMPerfMesh: two ranks (processes) over rxe0 and rxe1 meet through
// a host file, measure their pair (both directions with --both), and rank
// 0 reports each test's bandwidth; every rank exits 0 and nothing is left
// in rdma res.
func TestVMPerfMesh(t *testing.T) {
	before := resSummary(t)
	for _, c := range []struct {
		extra []string
		tests int
		unit  string
	}{{nil, 1, "MiB/s"}, {[]string{"--both"}, 2, "MiB/s"}, {[]string{"--lat"}, 1, "usec"}} {
		rep, errs, logs := runMesh(t, 2, c.extra...)
		for r, err := range errs {
			if err != nil {
				t.Errorf("%v rank %d: %v: %s", c.extra, r, err, logs[r])
			}
		}
		if rep.Failed != 0 || len(rep.Tests) != c.tests || rep.Unit != c.unit {
			t.Fatalf("%v: report %+v", c.extra, rep)
		}
		for _, ts := range rep.Tests {
			if ts.Figure == nil || *ts.Figure <= 0 {
				t.Errorf("%v: %+v: no figure", c.extra, ts)
				continue
			}
			t.Logf("%v %s -> %s: %.2f %s", c.extra, ts.Src.Device, ts.Dst.Device, *ts.Figure, rep.Unit)
		}
	}
	if after := resSummary(t); after != before {
		t.Errorf("rdma res show changed:\nbefore %s\nafter  %s", before, after)
	}
}
