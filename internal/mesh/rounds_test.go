package mesh

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNet stands for the fabric: a server waits for its client, a client
// measures 1000 MiB/s, or 500 through a slow endpoint.
type fakeNet struct {
	mu      sync.Mutex
	clients map[string]chan struct{} // round/test -> closed when its client ran
	slow    Endpoint
	hang    int                   // a rank whose clients never return (-1: none)
	rounds  map[int]chan struct{} // closed when a client of round k runs
	serving map[string]bool       // round/test whose server listens
	refuse  int                   // a rank whose servers cannot start (-1: none)
}

func newFakeNet() *fakeNet {
	return &fakeNet{clients: map[string]chan struct{}{}, rounds: map[int]chan struct{}{}, serving: map[string]bool{}, slow: Endpoint{-1, -1}, hang: -1, refuse: -1}
}

func (n *fakeNet) ch(t Test, k int) chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	key := fmt.Sprint(k, t)
	c, ok := n.clients[key]
	if !ok {
		c = make(chan struct{})
		n.clients[key] = c
	}
	return c
}

// round is closed once a client of round k has run.
func (n *fakeNet) round(k int) chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.rounds[k]
	if !ok {
		c = make(chan struct{})
		n.rounds[k] = c
	}
	return c
}

// fakeRunner is one rank's Runner over fakeNet.
type fakeRunner struct {
	n    *fakeNet
	rank int
}

func (r fakeRunner) Serve(ctx context.Context, t Test, k int) (func() error, error) {
	if r.rank == r.n.refuse {
		return nil, errors.New("cannot open the device")
	}
	c := r.n.ch(t, k)
	r.n.mu.Lock()
	r.n.serving[fmt.Sprint(k, t)] = true
	r.n.mu.Unlock()
	return func() error {
		// A client that has already run was served, whatever happens
		// to this rank after: as a real server that returned before
		// noticing its cancellation. (Left to select, a kill right
		// after the client ran made this a "context canceled" server
		// half of the time, under qemu-user.)
		select {
		case <-c:
			return nil
		default:
		}
		select {
		case <-c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
			return errors.New("no client came")
		}
	}, nil
}

func (r fakeRunner) Client(ctx context.Context, t Test, k int, addr string) Outcome {
	if r.rank == r.n.hang {
		<-ctx.Done()
		return Outcome{Err: "interrupted"}
	}
	if addr != "127.0.0.1" && t.Dst.Rank != 0 {
		return Outcome{Err: "bad address " + addr}
	}
	r.n.mu.Lock()
	up := r.n.serving[fmt.Sprint(k, t)]
	r.n.mu.Unlock()
	if !up {
		return Outcome{Err: "connection refused"}
	}
	close(r.n.ch(t, k))
	rc := r.n.round(k)
	r.n.mu.Lock()
	select {
	case <-rc:
	default:
		close(rc)
	}
	r.n.mu.Unlock()
	f := 1000.0
	if t.Src == r.n.slow || t.Dst == r.n.slow {
		f = 500
	}
	return Outcome{Figure: f}
}

// job runs a whole job of size ranks in this process: rendezvous, then
// rank 0 drives and the others follow; ranks in absent never start, and
// kill[r] cancels rank r's context when it fires.
func job(t *testing.T, size, devs int, n *fakeNet, absent map[int]bool, kill map[int]<-chan struct{}) ([]Outcome, *Plan) {
	t.Helper()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Rank 0 waits for every rank until the deadline: only a rank that
	// never starts costs it; the others, however loaded the host, come.
	wait := 30 * time.Second
	if len(absent) > 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	tm := Timing{Prepare: 5 * time.Second, Run: 5 * time.Second}
	plan, err := NewPlan(Plan{Pattern: AllPairs, Ranks: size, Devs: uniform(size, devs), Both: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for r := 1; r < size; r++ {
		if absent[r] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, rcancel := context.WithCancel(ctx)
			defer rcancel()
			if c := kill[r]; c != nil {
				go func() {
					select {
					case <-c:
						rcancel()
					case <-rctx.Done():
					}
				}()
			}
			roster, l, err := Join(rctx, ln.Addr().String(), Hello{Job: "j", Rank: r, Size: size}, deadline)
			if err != nil {
				return
			}
			defer l.Close()
			_ = Follow(rctx, r, plan, roster, l, fakeRunner{n, r}, tm)
		}()
	}
	roster, links, err := Gather(ctx, ln, Hello{Job: "j", Rank: 0, Size: size, Addr: "127.0.0.1"}, deadline)
	if err != nil {
		t.Fatal(err)
	}
	out := Drive(ctx, plan, roster, links, fakeRunner{n, 0}, tm)
	closeAll(links)
	cancel()
	wg.Wait()
	return out, plan
}

// outcomes checks that every test of the plan has exactly one outcome
// and returns them by test.
func outcomes(t *testing.T, plan *Plan, out []Outcome) map[Test]Outcome {
	t.Helper()
	by := map[Test]Outcome{}
	for _, o := range out {
		if _, dup := by[o.Test]; dup {
			t.Fatalf("%v: two outcomes", o.Test)
		}
		by[o.Test] = o
	}
	n := 0
	for k := range plan.Rounds() {
		for _, ts := range plan.Round(k, nil) {
			if _, ok := by[ts]; !ok {
				t.Fatalf("%v (round %d): no outcome", ts, k)
			}
			n++
		}
	}
	if n != len(out) {
		t.Fatalf("%d outcomes for %d tests", len(out), n)
	}
	return by
}

// TestRounds: a healthy job of 5 ranks of 2 devices measures every pair;
// the pairs through the slow endpoint show it.
func TestRounds(t *testing.T) {
	n := newFakeNet()
	n.slow = Endpoint{3, 1}
	out, plan := job(t, 5, 2, n, nil, nil)
	for ts, o := range outcomes(t, plan, out) {
		want := 1000.0
		if ts.Src == n.slow || ts.Dst == n.slow {
			want = 500
		}
		if o.Err != "" || o.Figure != want {
			t.Errorf("%v: %+v, want %v", ts, o, want)
		}
	}
}

// TestRoundsFaults: a rank that never starts, one killed mid-job, one
// that hangs, and one whose servers cannot start: their tests fail with
// what happened, every other test is measured, and the job ends.
func TestRoundsFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		setup func(n *fakeNet) (absent map[int]bool, kill map[int]<-chan struct{})
		rank  int
		want  string
	}{
		{"never started", func(n *fakeNet) (map[int]bool, map[int]<-chan struct{}) { return map[int]bool{2: true}, nil },
			2, "rank 2 never came to the rendezvous"},
		{"killed mid-job", func(n *fakeNet) (map[int]bool, map[int]<-chan struct{}) {
			// Rank 2 dies once round 2 is under way.
			return nil, map[int]<-chan struct{}{2: n.round(2)}
		}, 2, "rank 2 lost at"},
		{"hangs", func(n *fakeNet) (map[int]bool, map[int]<-chan struct{}) { n.hang = 2; return nil, nil },
			2, "did not answer go of round"},
		{"cannot serve", func(n *fakeNet) (map[int]bool, map[int]<-chan struct{}) { n.refuse = 2; return nil, nil },
			2, "rank 2 could not serve: cannot open the device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			n := newFakeNet()
			absent, kill := c.setup(n)
			start := time.Now()
			out, plan := job(t, 4, 1, n, absent, kill)
			if d := time.Since(start); d > 60*time.Second {
				t.Errorf("the job took %v", d)
			}
			failed := 0
			for ts, o := range outcomes(t, plan, out) {
				involved := ts.Src.Rank == c.rank || ts.Dst.Rank == c.rank
				switch {
				case !involved && (o.Err != "" || o.Figure != 1000):
					t.Errorf("%v does not involve rank %d: %+v", ts, c.rank, o)
				case involved && o.Err != "":
					failed++
					if !strings.Contains(o.Err, c.want) {
						t.Errorf("%v: %q, want %q", ts, o.Err, c.want)
					}
				}
			}
			if failed == 0 {
				t.Errorf("no test with rank %d failed", c.rank)
			}
		})
	}
}

// TestMergeServerFailure: a test whose server failed is failed, even
// when its client measured; both sides' reasons are kept.
func TestMergeServerFailure(t *testing.T) {
	tc := Test{Src: Endpoint{Rank: 0}, Dst: Endpoint{Rank: 1}}
	for _, c := range []struct {
		client, server []Outcome
		wantErr        string
		wantFig        float64
	}{
		{[]Outcome{{Test: tc, Figure: 100}}, nil, "", 100},
		{[]Outcome{{Test: tc, Figure: 100}}, []Outcome{{Test: tc, Err: "server side on rank 1: port rxe1/1 went down"}},
			"server side on rank 1: port rxe1/1 went down (the client measured 100.00)", 0},
		{[]Outcome{{Test: tc, Err: "retry exceeded"}}, []Outcome{{Test: tc, Err: "server side on rank 1: gone"}},
			"server side on rank 1: gone (the client: retry exceeded)", 0},
		{nil, []Outcome{{Test: tc, Err: "server side on rank 1: gone"}}, "server side on rank 1: gone", 0},
		{nil, nil, "no outcome reported", 0},
	} {
		done := map[int]Answer{1: {Outcomes: c.server}}
		got := merge(0, []Test{tc}, c.client, done, map[int]string{})
		if len(got) != 1 || got[0].Err != c.wantErr || got[0].Figure != c.wantFig || got[0].Test != tc {
			t.Errorf("client %+v server %+v: %+v, want error %q figure %v", c.client, c.server, got, c.wantErr, c.wantFig)
		}
	}
}
