package perf

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestAtomicPairs: rdmactl against rdmactl on the fake fabric, whose
// atomics work on the registered bytes: the byte check holds on both
// sides, with the counts the operations imply, and the layout is
// perftest's ib_atomic_bw/_lat.
func TestAtomicPairs(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"bw_faa", Params{Verb: VerbAtomic, Test: TestBW, Iters: 300}},
		{"bw_faa_2qp", Params{Verb: VerbAtomic, Test: TestBW, Iters: 200, QPs: 2}},
		{"bw_cas", Params{Verb: VerbAtomic, Test: TestBW, Iters: 300, Atomic: AtomicCmpSwap}},
		{"bw_faa_bidir", Params{Verb: VerbAtomic, Test: TestBW, Iters: 100, Bidir: true}},
		{"lat_faa", Params{Verb: VerbAtomic, Test: TestLat, Iters: 150}},
		{"lat_cas", Params{Verb: VerbAtomic, Test: TestLat, Iters: 150, Atomic: AtomicCmpSwap}},
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
			var wantF, wantT uint64
			if p.Atomic == AtomicFetchAdd {
				wantF, wantT = p.Iters-1, p.Iters
			}
			sa, ca := s.res.Atomic, cl.res.Atomic
			if sa == nil || ca == nil || !sa.OK || !ca.OK {
				t.Fatalf("atomic checks: server %+v, client %+v", sa, ca)
			}
			if len(ca.Fetched) != p.QPs || len(ca.Before) != p.QPs || len(ca.After) != p.QPs || len(sa.Target) != p.QPs {
				t.Fatalf("client %+v, server %+v for %d QPs", ca, sa, p.QPs)
			}
			for i := 0; i < p.QPs; i++ {
				// The fake's memory starts at 0, as rdmactl's.
				if ca.Before[i] != 0 || ca.After[i] != wantT || ca.Fetched[i] != wantF || sa.Target[i] != wantT {
					t.Fatalf("QP %d: before %d after %d (want %d), fetched %d (want %d), target %d", i, ca.Before[i], ca.After[i], wantT, ca.Fetched[i], wantF, sa.Target[i])
				}
			}
			if p.Bidir && (len(sa.Fetched) != p.QPs || len(ca.Target) != p.QPs || sa.Fetched[0] != wantF || ca.Target[0] != wantT || sa.After[0] != wantT) {
				t.Fatalf("-b: server %+v, client %+v", sa, ca)
			}
			title := "Atomic " + p.Atomic.String() + " "
			for _, o := range []string{s.out.String(), cl.out.String()} {
				if !strings.Contains(o, title) || !strings.Contains(o, " Outstand reads  : ") || strings.Contains(o, "RKey") {
					t.Fatalf("not ib_atomic's header (%q, outstanding reads, no RKey):\n%s", title, o)
				}
			}
			if p.Test == TestLat && (len(cl.res.Lat) != 1 || cl.res.Lat[0].Samples != p.Iters || cl.res.Lat[0].Size != 8) {
				t.Fatalf("client latency %+v", cl.res.Lat)
			}
		})
	}
}

// TestAtomicCheckFails: a peer's word that did not move as the
// operations imply, or a target that holds other than their count, fails
// the run with the numbers; a peer's word that did not start at 0 (a
// perftest server's random buffer) does not.
func TestAtomicCheckFails(t *testing.T) {
	p := Params{Verb: VerbAtomic, Test: TestLat, Iters: 20}
	p.Defaults()
	g := newLoopRig(t, p, false)
	g.r.prepare(8)
	binary.LittleEndian.PutUint64(g.their.Buf[g.r.dstOff(0):], 1000) // the peer's word
	if err := g.r.runLatRead(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		before, after uint64
		want          string
	}{
		{1000, 1020, ""},
		{1000, 1021, "went from 1000 to 1021 and the last atomic returned 1019; want +20 and 1020"},
		{0, 20, "went from 0 to 20 and the last atomic returned 1019"},
	} {
		s := &Session{P: &p, res: g.mine, cycle: 4096}
		s.result.Atomic = &AtomicCheck{Before: []uint64{c.before}, After: []uint64{c.after}}
		err := s.checkAtomic(g.r, true, false)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) || s.result.Atomic.OK != (c.want == "") {
			t.Errorf("before %d after %d: %v, %+v", c.before, c.after, err, s.result.Atomic)
		}
	}
	s := &Session{P: &p, res: g.mine, cycle: 4096}
	binary.LittleEndian.PutUint64(g.mine.Buf[g.r.dstOff(0):], 19)
	if err := s.checkAtomic(nil, false, true); err == nil || !strings.Contains(err.Error(), "QP 0's target words add up to 19, want 20") {
		t.Errorf("target: %v", err)
	}
}

func TestAtomicParams(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Verb: VerbAtomic, Size: 16}, "-s 16: the message size of atomic tests is 8"},
		{Params{Verb: VerbAtomic, AllSizes: true}, "cannot be changed"},
		{Params{Verb: VerbAtomic, Conn: UC}, "atomics need -c RC"},
		{Params{Verb: VerbAtomic, Inline: 8}, "never inline"},
		{Params{Verb: VerbAtomic, RDMACM: true}, ""}, // -R carries the READ depth atomics need (cm.go)
		{Params{Verb: VerbAtomic}, ""},
	} {
		c.p.Host = "x"
		c.p.Defaults()
		err := c.p.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	if op, err := ParseAtomicOp("CMP_AND_SWAP"); err != nil || op != AtomicCmpSwap {
		t.Errorf("CMP_AND_SWAP: %v %v", op, err)
	}
	if _, err := ParseAtomicOp("fetch_and_add"); err == nil {
		t.Error("lower case accepted; perftest compares exactly")
	}
}
