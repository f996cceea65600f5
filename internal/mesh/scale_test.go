package mesh

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// The scale of a whole job on one host: rank 0 in this process, every
// other rank a goroutine of one child process (this test binary again),
// so that what rank 0 allocates and keeps is measured alone. Tests run
// in no time (nullRunner): what is measured is the rendezvous, the
// rounds' orders and answers, and the report.

// followersEnv makes this test binary run ranks 1..size-1 of a job
// instead of its tests: "ADDR SIZE PATTERN".
const followersEnv = "RDMACTL_MESH_FOLLOWERS"

func TestMain(m *testing.M) {
	if v := os.Getenv(followersEnv); v != "" {
		if err := runFollowers(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nullRunner's tests take no time and measure 1000 (less for rank 7's).
type nullRunner struct{}

func (nullRunner) Serve(context.Context, Test, int) (func() error, error) {
	return func() error { return nil }, nil
}

func (nullRunner) Client(_ context.Context, t Test, _ int, _ string) Outcome {
	f := 1000.0
	if t.Src.Rank == 7 || t.Dst.Rank == 7 {
		f = 400
	}
	return Outcome{Figure: f}
}

var scaleTiming = Timing{Prepare: time.Minute, Run: time.Minute}

func scalePlan(pattern Pattern, size int) (*Plan, error) {
	return NewPlan(Plan{Pattern: pattern, Ranks: size, Devs: uniform(size, 1)})
}

// runFollowers is the child: ranks 1..size-1 join the coordinator at
// addr and follow its rounds.
func runFollowers(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return fmt.Errorf("%s=%q: want ADDR SIZE PATTERN", followersEnv, spec)
	}
	size, err := strconv.Atoi(f[1])
	if err != nil {
		return err
	}
	plan, err := scalePlan(Pattern(f[2]), size)
	if err != nil {
		return err
	}
	return errors.Join(follow(f[0], "scale", size, plan, time.Now().Add(5*time.Minute))...)
}

// follow runs ranks 1..size-1 of job as goroutines: each joins the
// coordinator at addr and follows plan's rounds with nullRunner. It
// returns each rank's error (nil for a rank told to end) once all are
// done.
func follow(addr, job string, size int, plan *Plan, deadline time.Time) []error {
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := 1; r < size; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roster, l, err := Join(context.Background(), addr, Hello{Job: job, Rank: r, Size: size, Devices: []string{"d0"}}, deadline)
			if err == nil {
				err = Follow(context.Background(), r, plan, roster, l, nullRunner{}, scaleTiming)
				l.Close()
			}
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	return errs
}

// scaleJob runs one job of size ranks and returns rank 0's report, the
// job's time, what rank 0 allocated and what it still holds (the report
// alive).
func scaleJob(tb testing.TB, pattern Pattern, size int) (rep *Report, took time.Duration, alloc, held uint64) {
	tb.Helper()
	ln := listen(tb)
	plan, err := scalePlan(pattern, size)
	if err != nil {
		tb.Fatal(err)
	}
	child := testexec.Self("-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %s", followersEnv, ln.Addr(), size, pattern))
	child.Stderr = os.Stderr
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	if err := child.Start(); err != nil {
		tb.Fatal(err)
	}
	roster, links, err := Gather(context.Background(), ln, Hello{Job: "scale", Rank: 0, Size: size, Addr: "127.0.0.1", Devices: []string{"d0"}}, time.Now().Add(5*time.Minute))
	if err != nil {
		_ = child.Process.Kill()
		_ = child.Wait()
		tb.Fatal(err)
	}
	out := Drive(context.Background(), plan, roster, links, nullRunner{}, scaleTiming)
	closeAll(links)
	rep = NewReport(out, false, func(e Endpoint) EndpointName {
		return EndpointName{Rank: e.Rank, Host: roster.Members[e.Rank].Host, Device: "d0"}
	}, Limits{}, roster, 10)
	took = time.Since(start)
	runtime.ReadMemStats(&after)
	runtime.GC()
	var kept runtime.MemStats
	runtime.ReadMemStats(&kept)
	runtime.KeepAlive(rep)
	if err := child.Wait(); err != nil {
		tb.Fatalf("the followers: %v", err)
	}
	held = 0
	if kept.HeapAlloc > before.HeapAlloc {
		held = kept.HeapAlloc - before.HeapAlloc
	}
	return rep, took, after.TotalAlloc - before.TotalAlloc, held
}

// TestMeshJobScale: 256 ranks in two processes meet, run a ring's rounds
// and rank 0 reports every test, the slow rank (7) first among the
// suspects. (BenchmarkMeshJob goes to 1,024.)
func TestMeshJobScale(t *testing.T) {
	rep, took, alloc, held := scaleJob(t, Ring, 256)
	if len(rep.Tests) != 256 || rep.Failed != 0 || len(rep.Absent) != 0 {
		t.Fatalf("%d tests, %d failed, absent %v", len(rep.Tests), rep.Failed, rep.Absent)
	}
	if s := rep.Suspects; len(s) == 0 || s[0].Endpoint.Rank != 7 || s[0].Fraction != 1 {
		t.Errorf("suspects %+v, want rank 7 first", s)
	}
	t.Logf("256 ranks, ring: %v, rank 0 allocated %.1f MB, holds %.0f KB", took.Round(time.Millisecond), float64(alloc)/1e6, float64(held)/1e3)
}

// BenchmarkMeshJob: the time of a whole job and rank 0's memory, by
// ranks: a ring (one test a rank) up to 1,024 ranks, all pairs (N(N-1)/2
// tests, N-1 rounds) up to 256.
func BenchmarkMeshJob(b *testing.B) {
	for _, c := range []struct {
		pattern Pattern
		ranks   int
	}{{Ring, 128}, {Ring, 256}, {Ring, 512}, {Ring, 1024}, {AllPairs, 64}, {AllPairs, 128}, {AllPairs, 256}} {
		b.Run(fmt.Sprintf("%s/%d", c.pattern, c.ranks), func(b *testing.B) {
			for range b.N {
				rep, took, alloc, held := scaleJob(b, c.pattern, c.ranks)
				if rep.Failed != 0 {
					b.Fatalf("%d failed", rep.Failed)
				}
				b.ReportMetric(float64(took.Milliseconds()), "ms/job")
				b.ReportMetric(float64(alloc)/1e6, "MB-rank0-alloc/job")
				b.ReportMetric(float64(held)/1e3, "KB-rank0-held/job")
				b.ReportMetric(float64(len(rep.Tests)), "tests/job")
			}
		})
	}
}

// TestDriveDeadline: past the job's deadline no round starts; its tests
// are reported as not run, and every rank is still told to end.
func TestDriveDeadline(t *testing.T) {
	const size = 4
	ln := listen(t)
	plan, err := scalePlan(AllPairs, size)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	done := make(chan []error, 1)
	go func() { done <- follow(ln.Addr().String(), "d", size, plan, deadline) }()
	roster, links, err := Gather(context.Background(), ln, Hello{Job: "d", Rank: 0, Size: size, Addr: "127.0.0.1", Devices: []string{"d0"}}, deadline)
	if err != nil {
		t.Fatal(err)
	}
	tm := scaleTiming
	tm.Deadline = time.Now()
	out := Drive(context.Background(), plan, roster, links, nullRunner{}, tm)
	closeAll(links)
	for _, err := range <-done {
		if err != nil {
			t.Errorf("%v (want told to end)", err)
		}
	}
	if len(out) != size*(size-1)/2 {
		t.Fatalf("%d outcomes", len(out))
	}
	for _, o := range out {
		if o.Err != "not run: the job's deadline passed first" {
			t.Errorf("%+v", o)
		}
	}
}
