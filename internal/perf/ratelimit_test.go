package perf

import (
	"strings"
	"testing"
	"time"
)

// The software limiter's gap and burst, as run_iter_bw computes them.
func TestSWGap(t *testing.T) {
	for _, c := range []struct {
		rl    RateLimit
		size  uint64
		gap   time.Duration
		burst uint64
	}{
		// 1000 pps in bursts of 10: 100 bursts a second.
		{RateLimit{Type: RateLimitSW, Rate: 1000, Units: 'p', Burst: 10}, 64, 10 * time.Millisecond, 10},
		// 1 Gbit/s of 125000-byte messages: 1000 pps; bursts of TX depth 100.
		{RateLimit{Type: RateLimitSW, Rate: 1, Units: 'g'}, 125000, 100 * time.Millisecond, 100},
		{RateLimit{Type: RateLimitSW, Rate: 1}, 125000, 100 * time.Millisecond, 100},
		// 64 MiB/s of 64 KiB: 1024 pps, bursts of 16: 64 a second.
		{RateLimit{Type: RateLimitSW, Rate: 64, Units: 'M', Burst: 16}, 65536, time.Second / 64, 16},
		{RateLimit{}, 64, 0, 0},
	} {
		p := Params{TxDepth: 100, RateLimit: c.rl}
		gap, burst, err := p.swGap(c.size)
		if err != nil || gap != c.gap || burst != c.burst {
			t.Errorf("%+v, %d B: gap %v burst %d (%v), want %v %d", c.rl, c.size, gap, burst, err, c.gap, c.burst)
		}
	}
	p := Params{TxDepth: 100, RateLimit: RateLimit{Type: RateLimitSW, Rate: 50, Units: 'p'}}
	if _, _, err := p.swGap(64); err == nil {
		t.Fatal("50 pps in bursts of 100: no error")
	}
}

// --rate_limit_type SW: the sender sends at the rate, not faster; the
// server prints the client's figures.
func TestSessionSWRateLimit(t *testing.T) {
	const pps = 4000
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 400, Size: 4096, TxDepth: 20}
	cli := p
	cli.RateLimit = RateLimit{Type: RateLimitSW, Rate: pps, Units: 'p'}
	s, c, _ := runPair(t, p, cli)
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	// 20 bursts of 20, 5 ms apart: 400 messages in 19 gaps and a bit.
	got := c.res.BW[0].MsgRate * 1e6
	if got > pps*1.15 || got < pps/3 {
		t.Fatalf("%.0f messages a second, limited to %d", got, pps)
	}
	t.Logf("%.0f messages a second, limited to %d", got, pps)
	if s.res.BW[0].MsgRate != c.res.BW[0].MsgRate {
		t.Fatalf("the server printed %v, the client %v", s.res.BW[0].MsgRate, c.res.BW[0].MsgRate)
	}
	for _, bad := range []Params{
		{Verb: VerbWrite, Test: TestBW, RateLimit: RateLimit{Type: RateLimitHW, Rate: 10}},
		{Verb: VerbWrite, Test: TestBW, RateLimit: RateLimit{Type: RateLimitPP, Rate: 10}},
		{Verb: VerbWrite, Test: TestLat, RateLimit: RateLimit{Type: RateLimitSW, Rate: 10}},
		{Verb: VerbSend, Test: TestBW, Bidir: true, RateLimit: RateLimit{Type: RateLimitSW, Rate: 10}},
		{Verb: VerbWrite, Test: TestBW, RateLimit: RateLimit{Type: RateLimitSW}},
	} {
		bad.Server = true
		bad.Defaults()
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "rate_limit") {
			t.Errorf("%+v: %v", bad.RateLimit, err)
		}
	}
}
