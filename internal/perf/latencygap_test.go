package perf

import (
	"strings"
	"testing"
	"time"
)

// --latency_gap: each side spins the gap before it reads its clock and
// posts, so every sample holds it: a write or send round trip both
// sides' gaps (the reported half, one gap), a read this side's.
func TestSessionLatencyGap(t *testing.T) {
	const gap = 3 * time.Millisecond
	for _, v := range []Verb{VerbWrite, VerbSend, VerbRead} {
		for _, withGap := range []bool{false, true} {
			p := Params{Verb: v, Test: TestLat, Iters: 20}
			if withGap {
				p.LatencyGap = gap
			}
			s, c, _ := runPair(t, p, p)
			if s.err != nil || c.err != nil {
				t.Fatalf("%s gap %v: server: %v client: %v", v, withGap, s.err, c.err)
			}
			min := c.res.Lat[0].Min // usec
			if withGap && min < float64(gap/time.Microsecond) {
				t.Errorf("%s: t_min %.2f usec with a %v gap", v, min, gap)
			}
			if !withGap && min >= float64(gap/time.Microsecond) {
				t.Logf("%s: t_min %.2f usec without a gap: the fake fabric was slow, the check says nothing", v, min)
			}
		}
	}
	p := Params{Verb: VerbWrite, Test: TestBW, Server: true, LatencyGap: time.Millisecond}
	p.Defaults()
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--latency_gap") {
		t.Fatalf("bw with --latency_gap: %v", err)
	}
}
