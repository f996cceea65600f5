package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"
)

// After the rendezvous, rank 0 drives the rounds of the plan over the
// same connections. Each round has two steps, so that no client connects
// before its server listens: Prepare (each rank starts the server side of
// its tests in the round and answers Ready), then Go (each rank runs the
// client side and answers Done with what it measured). A rank that does
// not answer in time, or whose connection breaks, is dead from then on:
// its tests in this and later rounds fail with the reason, and every
// other rank is told (Skip) so that none waits for it.

// Order is one step of a round, from rank 0.
type Order struct {
	Step  string `json:"step"` // "prepare", "go", "end"
	Round int    `json:"round"`
	// Skip are the ranks that are dead: tests with them are not run.
	Skip []int `json:"skip"`
}

// Outcome is one test's result, from the rank that ran its client side
// (or, when the client side never ran, from the server side).
type Outcome struct {
	Test   Test            `json:"test"`
	Round  int             `json:"round"`
	Figure float64         `json:"figure"`           // MiB/s (bandwidth) or µs (latency)
	Report json.RawMessage `json:"report,omitempty"` // the JSON of one perf run
	Err    string          `json:"error,omitempty"`
}

// Answer is a rank's reply to an Order.
type Answer struct {
	Step     string    `json:"step"` // "ready", "done"
	Round    int       `json:"round"`
	Outcomes []Outcome `json:"outcomes,omitempty"`
	Err      string    `json:"error,omitempty"` // the rank could not prepare
}

// Runner runs this rank's side of tests. Serve starts the server side
// of t and returns once it listens; wait gives its end (an error only: the
// client side reports the figures). Client runs the client side of t
// against the server's rank at addr.
type Runner interface {
	Serve(ctx context.Context, t Test, round int) (wait func() error, err error)
	Client(ctx context.Context, t Test, round int, addr string) Outcome
}

// Timing bounds each step: how long ranks have to answer Prepare, and
// to answer Go (a test's duration plus the time to set it up and end
// it).
type Timing struct {
	Prepare time.Duration
	Run     time.Duration
	// Deadline, when set, is the job's: no round starts after it, and
	// the tests of the rounds left are reported as not run. A round
	// under way ends within its own bounds (Prepare plus Run).
	Deadline time.Time
}

// Drive is rank 0's side of the rounds: it runs the plan over links (by
// rank; links[0] is nil, rank 0 runs its own tests through run) and
// returns every test's outcome, in rounds and order.
func Drive(ctx context.Context, plan *Plan, roster *Roster, links []*Link, run Runner, tm Timing) []Outcome {
	dead := map[int]string{}
	for _, m := range roster.Members {
		if m.Absent != "" {
			dead[m.Rank] = m.Absent
		}
	}
	for r, l := range links {
		if r != 0 && l == nil && dead[r] == "" {
			dead[r] = "lost before the first round"
		}
	}
	self := &rankState{rank: 0, plan: plan, roster: roster, run: run}
	var out []Outcome
	var tests []Test
	for k := range plan.Rounds() {
		tests = plan.Round(k, tests[:0])
		why := ""
		switch {
		case ctx.Err() != nil:
			why = "the job was interrupted"
		case !tm.Deadline.IsZero() && time.Now().After(tm.Deadline):
			why = "not run: the job's deadline passed first"
		}
		if why != "" {
			for _, t := range tests {
				out = append(out, Outcome{Test: t, Round: k, Err: why})
			}
			continue
		}
		// Prepare: every rank starts its servers, rank 0 too. A server
		// that could not start is reported with the round's outcomes.
		skip := deadList(dead)
		broadcast(links, dead, Order{Step: "prepare", Round: k, Skip: skip}, tm.Prepare, "ready", k)
		_ = self.prepare(ctx, k, skip)
		// Go: clients run; every rank answers with its outcomes.
		skip = deadList(dead)
		doneCh := make(chan map[int]Answer, 1)
		go func() {
			doneCh <- broadcast(links, dead, Order{Step: "go", Round: k, Skip: skip}, tm.Run, "done", k)
		}()
		mine := self.goRound(ctx, k, skip)
		done := <-doneCh
		out = append(out, merge(k, tests, mine, done, dead)...)
	}
	for r, l := range links {
		if l != nil && dead[r] == "" {
			_ = l.Send(Order{Step: "end"}, time.Now().Add(5*time.Second))
		}
	}
	return out
}

// merge is round k's outcome of each test: the client side's (the rank
// that sent) where it reported, else the server side's failure, else why
// neither could (a dead rank). A server that failed fails the test even
// when its client measured: a test whose server lost its port during the
// run has not passed, whatever the client saw.
func merge(k int, tests []Test, mine []Outcome, done map[int]Answer, dead map[int]string) []Outcome {
	client, server := map[Test]Outcome{}, map[Test]Outcome{}
	add := func(r int, os []Outcome) {
		for _, o := range os {
			switch {
			case o.Round != k:
			case o.Test.Src.Rank == r:
				client[o.Test] = o
			case o.Test.Dst.Rank == r:
				server[o.Test] = o
			}
		}
	}
	add(0, mine)
	for r, a := range done {
		add(r, a.Outcomes)
	}
	out := make([]Outcome, 0, len(tests))
	for _, t := range tests {
		o, ok := client[t]
		switch srv, has := server[t]; {
		case !ok:
			o, ok = srv, has
		case has && o.Err != "" && srv.Err != "":
			// Both sides failed: the server's reason is the cause.
			o.Err = srv.Err + " (the client: " + o.Err + ")"
		case has && srv.Err != "":
			o = Outcome{Err: srv.Err + " (the client measured " + strconv.FormatFloat(o.Figure, 'f', 2, 64) + ")"}
		}
		switch {
		case dead[t.Src.Rank] != "" && (!ok || o.Err != ""):
			o = Outcome{Test: t, Err: fmt.Sprintf("rank %d %s", t.Src.Rank, dead[t.Src.Rank])}
		case dead[t.Dst.Rank] != "" && (!ok || o.Err != ""):
			o = Outcome{Test: t, Err: fmt.Sprintf("rank %d %s", t.Dst.Rank, dead[t.Dst.Rank])}
		case !ok:
			o = Outcome{Test: t, Err: "no outcome reported"}
		}
		o.Test, o.Round = t, k
		out = append(out, o)
	}
	return out
}

// deadList is the dead ranks, sorted.
func deadList(dead map[int]string) []int {
	out := []int{}
	for r := range dead {
		out = append(out, r)
	}
	sort.Ints(out)
	return out
}

// broadcast sends o to every live rank and collects the answers of step
// want for round k within d; a rank that does not answer is marked dead
// (in dead, under the caller's goroutine after it returns).
func broadcast(links []*Link, dead map[int]string, o Order, d time.Duration, want string, k int) map[int]Answer {
	var mu sync.Mutex
	answers := map[int]Answer{}
	failed := map[int]string{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for r, l := range links {
		if l == nil || dead[r] != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a Answer
			err := l.Send(o, deadline)
			if err == nil {
				err = l.Recv(&a, deadline)
			}
			if err == nil && (a.Step != want || a.Round != k) {
				err = fmt.Errorf("answered %q for round %d, want %q for round %d", a.Step, a.Round, want, k)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[r] = describe(err, o.Step, k)
				return
			}
			answers[r] = a
		}()
	}
	wg.Wait()
	for r, why := range failed {
		dead[r] = why
		links[r].Close()
	}
	return answers
}

// describe says why a rank stopped answering.
func describe(err error, step string, k int) string {
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Sprintf("did not answer %s of round %d in time (hung or too slow)", step, k)
	}
	return fmt.Sprintf("lost at %s of round %d: %v (the process died or the network failed)", step, k, err)
}

// rankState is one rank's side of the rounds.
type rankState struct {
	rank    int
	plan    *Plan
	roster  *Roster
	run     Runner
	waits   map[Test]func() error
	srvErrs map[Test]error
	tests   []Test
}

func (s *rankState) mine(k int, skip []int) []Test {
	s.tests = s.plan.Round(k, s.tests[:0])
	out := []Test{}
	for _, t := range s.tests {
		if (t.Src.Rank == s.rank || t.Dst.Rank == s.rank) && !contains(skip, t.Src.Rank) && !contains(skip, t.Dst.Rank) {
			out = append(out, t)
		}
	}
	return out
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// prepare starts the server side of this rank's tests in round k.
func (s *rankState) prepare(ctx context.Context, k int, skip []int) error {
	s.waits, s.srvErrs = map[Test]func() error{}, map[Test]error{}
	var first error
	for _, t := range s.mine(k, skip) {
		if t.Dst.Rank != s.rank {
			continue
		}
		w, err := s.run.Serve(ctx, t, k)
		if err != nil {
			s.srvErrs[t] = err
			if first == nil {
				first = err
			}
			continue
		}
		s.waits[t] = w
	}
	return first
}

// goRound runs the client side of this rank's tests in round k, and
// waits for its servers; it returns the outcomes it knows.
func (s *rankState) goRound(ctx context.Context, k int, skip []int) []Outcome {
	var mu sync.Mutex
	var out []Outcome
	var wg sync.WaitGroup
	for _, t := range s.mine(k, skip) {
		switch {
		case t.Src.Rank == s.rank:
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := s.run.Client(ctx, t, k, s.roster.Members[t.Dst.Rank].Addr)
				o.Test, o.Round = t, k
				mu.Lock()
				out = append(out, o)
				mu.Unlock()
			}()
		case s.srvErrs[t] != nil:
			out = append(out, Outcome{Test: t, Round: k, Err: fmt.Sprintf("rank %d could not serve: %v", s.rank, s.srvErrs[t])})
		default:
			if w := s.waits[t]; w != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := w(); err != nil {
						mu.Lock()
						out = append(out, Outcome{Test: t, Round: k, Err: fmt.Sprintf("server side on rank %d: %v", s.rank, err)})
						mu.Unlock()
					}
				}()
			}
		}
	}
	wg.Wait()
	return out
}

// Follow is a rank's side of the rounds (not rank 0): it obeys rank 0's
// orders on l until the end, running its tests through run. It returns
// nil at the end, or why it stopped early.
func Follow(ctx context.Context, rank int, plan *Plan, roster *Roster, l *Link, run Runner, tm Timing) error {
	s := &rankState{rank: rank, plan: plan, roster: roster, run: run}
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		var o Order
		// Rank 0 may be busy with a slow round: the next order comes
		// within the longest step.
		if err := l.Recv(&o, time.Now().Add(tm.Prepare+tm.Run+time.Minute)); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("rank 0 is gone: %w", err)
		}
		var a Answer
		switch o.Step {
		case "end":
			return nil
		case "prepare":
			a = Answer{Step: "ready", Round: o.Round}
			if err := s.prepare(ctx, o.Round, o.Skip); err != nil {
				a.Err = err.Error()
			}
		case "go":
			a = Answer{Step: "done", Round: o.Round, Outcomes: s.goRound(ctx, o.Round, o.Skip)}
		default:
			return fmt.Errorf("rank 0 sent step %q", o.Step)
		}
		if err := l.Send(a, time.Now().Add(30*time.Second)); err != nil {
			return fmt.Errorf("rank 0 is gone: %w", err)
		}
	}
}
