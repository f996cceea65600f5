package perf

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
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
		{Verb: VerbWrite, Test: TestBW, RateLimit: RateLimit{Type: RateLimitHW, Rate: 7, Text: "7"}},
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

// TestSessionHWRateLimit: --rate_limit alone is perftest's HW limiter,
// the QPs' static rate. On RoCE (the fake's Ethernet port) it falls back
// to SW with one line on stderr, perftest's red one under its name; asked
// for by name it is refused as this link's lack (exit 5); on InfiniBand
// the QPs get the rate's enum ibv_rate in their address vector.
func TestSessionHWRateLimit(t *testing.T) {
	srv := Params{Verb: VerbWrite, Test: TestBW, Iters: 400, Size: 4096, TxDepth: 20, Device: "fake0", IBPort: 1}
	for _, perftest := range []bool{false, true} {
		cli := srv
		cli.Report.AsPerftest = perftest
		cli.RateLimit = RateLimit{Type: RateLimitHW, Rate: 5, Text: "5", Units: 'M'}
		var notes bytes.Buffer
		s, c, _ := runPairWith(t, srv, cli, 0, func(_, cs *Session) { cs.Notes = &notes })
		if s.err != nil || c.err != nil {
			t.Fatalf("server: %v client: %v", s.err, c.err)
		}
		// (Under perftest's name the fake, a device perftest does not
		// know, also gets perftest's inline line.)
		want := "\nrdmactl: perf: --rate_limit: fake0/1 is Ethernet (RoCE), where "
		if perftest {
			want = "\n\x1b[31mThe QP failed to accept HW rate limit, providing SW rate limit \x1b[0m\n"
		}
		if got := "\n" + notes.String(); !strings.Contains(got, want) || strings.Count(got, "HW") != 1 {
			t.Errorf("perftest %v: stderr %q, want one line %q", perftest, notes.String(), want)
		}
		// 5 MiB/s of 4096-byte messages: 1280 a second, in bursts of
		// the TX depth (SW's default), as perftest's fallback.
		if got := c.res.BW[0].MsgRate * 1e6; got > 1280*1.15 || got < 1280/3 {
			t.Errorf("perftest %v: %.0f messages a second, limited to 1280", perftest, got)
		}

		cli.RateLimit.Explicit = true
		s, c, _ = runPairWith(t, srv, cli, 0, nil)
		if !errors.Is(c.err, verbs.ErrUnsupported) || !strings.Contains(c.err.Error(), "--rate_limit_type HW") {
			t.Errorf("perftest %v: HW by name on RoCE: %v, want verbs.ErrUnsupported (exit 5)", perftest, c.err)
		}
		_ = s
	}

	cli := srv
	cli.RateLimit = RateLimit{Type: RateLimitHW, Rate: 56, Text: "56"}
	var dev *fakeDevice
	_, c, _ := runPairWith(t, srv, cli, 0, func(ss, cs *Session) {
		for _, x := range []*Session{ss, cs} {
			x.Dev.(*fakeDevice).port.LinkLayer = vocab.LinkLayerInfiniBand
		}
		dev = cs.Dev.(*fakeDevice)
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	if len(dev.qps) == 0 {
		t.Fatal("no QP")
	}
	for i, q := range dev.qps {
		if q.cfg.StaticRate != 12 { // IBV_RATE_56_GBPS
			t.Errorf("QP %d: static rate %d, want 12 (56 Gb/s)", i, q.cfg.StaticRate)
		}
	}
}
