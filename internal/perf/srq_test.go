package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestSRQPairs: send tests with --use-srq between two rdmactl sides on the
// fake fabric, whose SRQ hands each message the next shared receive: every
// message arrives, the receivers' payload check holds, and the header says
// so. A unidirectional sender has no SRQ.
func TestSRQPairs(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"bw_2qp", Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, QPs: 2, Iters: 300, Size: 1000}},
		{"bw_bidir", Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, Bidir: true, Iters: 200, Size: 256}},
		{"bw_small_rx", Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, QPs: 4, RxDepth: 6, Iters: 100, Size: 64}},
		{"lat", Params{Verb: VerbSend, Test: TestLat, UseSRQ: true, Iters: 100, Size: 33}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cl, f := runPair(t, c.p, c.p)
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v\nclient: %v\n--- server\n%s--- client\n%s", s.err, cl.err, s.out.String(), cl.out.String())
			}
			if f.live != 0 {
				t.Fatalf("%d fake objects leaked", f.live)
			}
			p := c.p
			p.Defaults()
			for i, side := range []*sideOut{s, cl} {
				rcv := i == 0 || p.Bidir || p.Test == TestLat
				sc := side.res.SRQ
				if !rcv {
					if sc != nil {
						t.Fatalf("a sender without receives reports an SRQ check %v", sc)
					}
					continue
				}
				var n uint64
				if sc != nil {
					for _, x := range sc.Received {
						n += x
					}
				}
				want := p.Iters * uint64(p.QPs)
				if p.Test == TestLat {
					want = p.Iters
				}
				if sc == nil || !sc.PayloadChecked || !sc.PayloadOK || n != want {
					t.Fatalf("side %d: SRQ check %v, want %d messages with the payload checked", i, sc, want)
				}
				if !strings.Contains(side.out.String(), "Using SRQ      : ON") {
					t.Fatalf("header lacks 'Using SRQ : ON':\n%s", side.out.String())
				}
			}
		})
	}
}

// TestSRQPayloadMismatch: a receive area that does not hold what the
// rdmactl peer sent fails the run, naming the byte.
func TestSRQPayloadMismatch(t *testing.T) {
	p := Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, Server: true, Iters: 10, Size: 64}
	p.Defaults()
	g := newLoopRig(t, p, false)
	g.r.prepare(64)
	for k := uint64(0); k < 64; k++ {
		g.mine.Buf[g.r.dstOff(0)+k] = srqPattern(k)
	}
	g.r.rcnt[0] = 10
	s := &Session{P: &p, conn: &Conn{peerVer: Version{Rdmactl: true}}}
	if err := s.checkSRQ(g.r); err != nil || !s.result.SRQ.PayloadOK {
		t.Fatalf("good payload: %v %v", err, s.result.SRQ)
	}
	g.mine.Buf[g.r.dstOff(0)+40] ^= 0xff
	err := s.checkSRQ(g.r)
	if err == nil || !strings.Contains(err.Error(), "receive area 0 byte 40") || s.result.SRQ.PayloadOK {
		t.Fatalf("corrupt payload: %v %v", err, s.result.SRQ)
	}
	// A perftest peer's payload is random: not checked.
	s.conn.peerVer.Rdmactl = false
	if err := s.checkSRQ(g.r); err != nil || s.result.SRQ.PayloadChecked {
		t.Fatalf("perftest peer: %v %v", err, s.result.SRQ)
	}
}

func TestSRQParams(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Verb: VerbWrite, UseSRQ: true}, "--use-srq applies to send tests only"},
		{Params{Verb: VerbSend, Conn: UD, UseSRQ: true}, "RC and UC QPs only"},
		{Params{Verb: VerbSend, UseSRQ: true, RDMACM: true}, ""}, // -R: the QPs are created on the SRQ, the CM told so
		{Params{Verb: VerbSend, UseSRQ: true}, ""},
	} {
		c.p.Host = "x"
		c.p.Defaults()
		err := c.p.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	p := Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, Server: true, QPs: 4, RxDepth: 512}
	if !p.srqSide() || p.rxPerQP() != 128 {
		t.Errorf("server: srqSide %t, %d receives per QP; want true, 128", p.srqSide(), p.rxPerQP())
	}
	p.Server = false
	if p.srqSide() || p.rxPerQP() != 512 {
		t.Errorf("unidirectional client: srqSide %t, %d per QP; want false, 512", p.srqSide(), p.rxPerQP())
	}
	var _ verbs.RecvQueue = (*fakeSRQ)(nil)
}
