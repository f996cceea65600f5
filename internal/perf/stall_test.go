package perf

import (
	"sync/atomic"
	"testing"
	"time"
)

// A wait may last as long as moving what one completion stands for at
// 1 MB/s, on top of the base limit: ib_read_bw -a signals one READ in 100,
// and rxe under TCG moved 100 x 1 MiB in ~12 s, past a flat 10 s limit.
func TestStallAllowsForOneCompletionsData(t *testing.T) {
	var stop atomic.Bool
	for _, c := range []struct {
		test  Test
		cqMod int
		qps   int
		size  uint64
		want  time.Duration
	}{
		{TestBW, 100, 1, 1 << 20, 10*time.Second + 104857600*time.Microsecond},
		{TestBW, 100, 2, 1 << 20, 10*time.Second + 2*104857600*time.Microsecond},
		{TestBW, 1, 1, 65536, 10*time.Second + 65536*time.Microsecond},
		{TestLat, 100, 1, 8 << 20, 10*time.Second + 8388608*time.Microsecond},
		{TestLat, 100, 1, 2, 10*time.Second + 2*time.Microsecond},
	} {
		p := Params{Verb: VerbRead, Test: c.test, CQMod: c.cqMod, QPs: c.qps, PostList: 1, Iters: 100}
		r := newRunner(&p, &Resources{QPs: make([]QP, c.qps)}, nil, nil, 4096, &stop)
		r.prepare(c.size)
		if r.stall != c.want {
			t.Errorf("%v, -Q %d, %d QPs, %d B: stall limit %v, want %v", c.test, c.cqMod, c.qps, c.size, r.stall, c.want)
		}
	}
}
