package perf

import (
	"testing"
	"time"
)

// TestDefaultsFitDepthsToIters: the queue depths perftest 6.06 prints
// (" TX depth", " RX depth" and its --out_json TX_depth/RX_depth) for
// these command lines, taken from its force_dependecies.
func TestDefaultsFitDepthsToIters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Params
		tx, rx int
	}{
		{"write_bw -n 100", Params{Verb: VerbWrite, Test: TestBW, Iters: 100}, 100, 1},
		{"write_bw", Params{Verb: VerbWrite, Test: TestBW}, 128, 1},
		{"send_bw -n 100", Params{Verb: VerbSend, Test: TestBW, Iters: 100}, 100, 100},
		{"send_bw -n 99", Params{Verb: VerbSend, Test: TestBW, Iters: 99}, 99, 100},
		{"send_bw", Params{Verb: VerbSend, Test: TestBW}, 128, 512},
		{"send_bw -c UD", Params{Verb: VerbSend, Test: TestBW, Conn: UD}, 128, 1000},
		{"send_bw -c UD -n 20000", Params{Verb: VerbSend, Test: TestBW, Conn: UD, Iters: 20000}, 128, 16000},
		{"send_bw -c UC -r 300", Params{Verb: VerbSend, Test: TestBW, Conn: UC, RxDepth: 300}, 128, 300},
		{"send_bw -r 101 -D 2", Params{Verb: VerbSend, Test: TestBW, RxDepth: 101, Duration: 2 * time.Second}, 128, 102},
		{"send_bw -n 10 -D 2", Params{Verb: VerbSend, Test: TestBW, Iters: 10, Duration: 2 * time.Second}, 128, 512},
		{"send_lat -n 5", Params{Verb: VerbSend, Test: TestLat, Iters: 5}, 1, 6},
	} {
		p := tc.p
		p.Defaults()
		if p.TxDepth != tc.tx || p.RxDepth != tc.rx {
			t.Errorf("%s: TX depth %d, RX depth %d; perftest %d, %d", tc.name, p.TxDepth, p.RxDepth, tc.tx, tc.rx)
		}
	}
}
