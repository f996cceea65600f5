//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// meshEndpoint is an endpoint in perf mesh -j's report.
type meshEndpoint struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device string `json:"device"`
}

// meshTestReport is a test of perf mesh -j's report, with its round.
type meshTestReport struct {
	Src    meshEndpoint `json:"src"`
	Dst    meshEndpoint `json:"dst"`
	Round  int          `json:"round"`
	Figure *float64     `json:"figure"`
	Error  string       `json:"error"`
}

// meshReport is the part of perf mesh -j's report the tests read.
type meshReport struct {
	Unit     string           `json:"unit"`
	Median   float64          `json:"median"`
	Failed   int              `json:"failed"`
	Tests    []meshTestReport `json:"tests"`
	Slowest  []meshTestReport `json:"slowest"`
	Suspects []struct {
		Endpoint  meshEndpoint `json:"endpoint"`
		Fraction  float64      `json:"fraction"`
		MeanShare float64      `json:"mean_share"`
	} `json:"suspects"`
	Absent []struct {
		Rank   int    `json:"rank"`
		Reason string `json:"reason"`
	} `json:"absent"`
}

// meshRank is one rank process of a --hosts job on this VM.
type meshRank struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{}
	err            error
}

// startMeshRanks starts the ranks listed of a job of size ranks (--hosts,
// all on this VM, rank r on rxe<r>, rank 0 the coordinator on port
// 18600), with extra options; they are killed when the test ends.
func startMeshRanks(t *testing.T, ctx context.Context, size int, ranks []int, extra ...string) map[int]*meshRank {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte(strings.Repeat("127.0.0.1\n", size)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := map[int]*meshRank{}
	for _, r := range ranks {
		args := append([]string{"-j", "perf", "mesh", "write", "--hosts", hosts, "--rank", strconv.Itoa(r),
			"--devices", "rxe" + strconv.Itoa(r), "--coordinator", "127.0.0.1:18600"}, extra...)
		m := &meshRank{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan struct{})}
		m.cmd.Stdout, m.cmd.Stderr = &m.stdout, &m.stderr
		if err := m.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { m.err = m.cmd.Wait(); close(m.done) }()
		out[r] = m
	}
	t.Cleanup(func() {
		for _, m := range out {
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
	return out
}

// exitCode is how m ended (after <-m.done): its exit code, -1 for a
// signal.
func (m *meshRank) exitCode() int {
	if m.err == nil {
		return 0
	}
	if ee, ok := m.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -2
}

// runMesh runs a --hosts job of n ranks on this VM (rank r tests device
// rxe<r>) with 2-second tests, and returns rank 0's report and every
// rank's exit and stderr.
func runMesh(t *testing.T, n int, extra ...string) (*meshReport, []error, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := make([]int, n)
	for r := range all {
		all[r] = r
	}
	ranks := startMeshRanks(t, ctx, n, all, append([]string{"-D", "2", "--join-timeout", "60s"}, extra...)...)
	errs := make([]error, n)
	logs := make([]string, n)
	for r, m := range ranks {
		<-m.done
		errs[r], logs[r] = m.err, m.stderr.String()
	}
	var rep meshReport
	if err := json.Unmarshal([]byte(ranks[0].stdout.String()), &rep); err != nil {
		t.Fatalf("rank 0's report: %v\n%s\nlogs %q", err, ranks[0].stdout.String(), logs)
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
