package perf

import (
	"strings"
	"testing"
)

// --perform_warm_up: the posting side posts a send queue's worth of WRs
// per QP (in post lists) before the measurement, which counts only its
// own iterations.
func TestSessionWarmUp(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbRead} {
		posts := map[bool]int{}
		for _, warm := range []bool{false, true} {
			p := Params{Verb: v, Test: TestBW, Iters: 200, QPs: 2, TxDepth: 16, PostList: 4, WarmUp: warm}
			s, c, f := runPair(t, Params{Verb: v, Test: TestBW, Iters: 200, QPs: 2, TxDepth: 16, PostList: 4}, p)
			if s.err != nil || c.err != nil {
				t.Fatalf("%s warm-up %v: server: %v client: %v", v, warm, s.err, c.err)
			}
			if got := c.res.BW[0].Iters; got != 400 {
				t.Fatalf("%s warm-up %v: %d iterations reported, want 400", v, warm, got)
			}
			posts[warm] = f.postCount()
		}
		if d := posts[true] - posts[false]; d != 2*16/4 {
			t.Errorf("%s: the warm-up made %d post calls, want 2 QPs x 16 WRs / post list 4 = 8", v, d)
		}
	}
	// perftest takes the option in every test and ignores it in send_bw
	// and the latency tests: so does perf.
	for _, p := range []Params{
		{Verb: VerbSend, Test: TestBW, WarmUp: true},
		{Verb: VerbWrite, Test: TestLat, WarmUp: true},
		{Verb: VerbSend, Test: TestLat, WarmUp: true},
	} {
		p.Server = true
		p.Defaults()
		if err := p.Validate(); err != nil || p.WarmUp {
			t.Errorf("%s %s: %v, warm-up %v; want it accepted and dropped", p.Verb, p.Test, err, p.WarmUp)
		}
	}
	p := Params{Verb: VerbAtomic, Test: TestBW, WarmUp: true, Server: true}
	p.Defaults()
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--perform_warm_up") {
		t.Errorf("atomic bw: %v, want a --perform_warm_up error", err)
	}
}
