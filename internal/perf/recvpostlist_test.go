package perf

import (
	"strings"
	"testing"
)

// --recv_post_list N: a receiver posts its receives N to a call, a list
// once all of it completed (perftest 6.29's run_iter_bw_server), and
// says so in its header; only bandwidth runs take it, -n must be a
// multiple of it and a QP's receive queue must hold a list.
func TestSessionRecvPostList(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"send_bw", Params{Verb: VerbSend, Test: TestBW, Iters: 200, RecvPostList: 8}},
		{"send_bw_q2", Params{Verb: VerbSend, Test: TestBW, Iters: 200, QPs: 2, RecvPostList: 4}},
		{"send_bw_bidir", Params{Verb: VerbSend, Test: TestBW, Iters: 200, Bidir: true, RecvPostList: 8}},
		{"write_imm_bw", Params{Verb: VerbWrite, WriteImm: true, Test: TestBW, Iters: 200, RecvPostList: 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var lists map[int]int
			s, cl, _ := runPairWith(t, c.p, c.p, 0, func(srv, _ *Session) {
				lists = map[int]int{}
				srv.Dev.(*fakeDevice).f.recvLists = lists
			})
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			n := c.p.RecvPostList
			qps := max(1, c.p.QPs)
			sides := 1
			if c.p.Bidir {
				sides = 2
			}
			// Every receive in a list of n, all the run's and no more.
			if len(lists) != 1 || lists[n]*n != int(c.p.Iters)*qps*sides {
				t.Fatalf("PostRecv calls by list length: %v; want only lists of %d, %d receives in all", lists, n, int(c.p.Iters)*qps*sides)
			}
			if !strings.Contains(s.out.String(), " Recv Post List  : ") {
				t.Fatalf("header:\n%s", s.out.String())
			}
		})
	}
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Verb: VerbSend, Test: TestLat, RecvPostList: 4}, "bandwidth tests only"},
		{Params{Verb: VerbSend, Test: TestBW, Iters: 1000, RecvPostList: 3}, "not a multiple"},
		{Params{Verb: VerbSend, Test: TestBW, Iters: 1024, RxDepth: 16, RecvPostList: 32}, "more than the 16 receives"},
		{Params{Verb: VerbSend, Test: TestBW, RecvPostList: -1}, "1..65536"},
	} {
		p := c.p
		p.Server = true
		p.Defaults()
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--recv_post_list") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want --recv_post_list ... %s", c.p, err, c.want)
		}
	}
}
