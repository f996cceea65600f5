package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// --cqe_poll: the bandwidth loop asks each poll for that many
// completions (default 64), on the send CQ and on a receiver's CQ.
func TestSessionCQEPoll(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		p := Params{Verb: VerbSend, Test: TestBW, Iters: 200, CQMod: 1, CQEPoll: n}
		var sres, cres *Resources
		s, c, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) {
			srv.testAfter = func(res *Resources, _ []Dest) { sres = res }
			cli.testAfter = func(res *Resources, _ []Dest) { cres = res }
		})
		if s.err != nil || c.err != nil {
			t.Fatalf("--cqe_poll %d: server: %v client: %v", n, s.err, c.err)
		}
		want := n
		if n == 0 {
			want = 64
		}
		cs, sr := maxAsked(cres.SendCQ), maxAsked(sres.RecvCQ)
		if cs != want || sr != want {
			t.Errorf("--cqe_poll %d: the client's send CQ was asked for %d at most, the server's receive CQ %d; want %d", n, cs, sr, want)
		}
	}
	p := Params{Verb: VerbWrite, Test: TestLat, Server: true, CQEPoll: 4}
	p.Defaults()
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--cqe_poll") {
		t.Fatalf("--lat --cqe_poll: %v", err)
	}
}

func maxAsked(cq verbs.CompletionQueue) int {
	f := cq.(*fakeCQ)
	f.f.mu.Lock()
	defer f.f.mu.Unlock()
	return f.maxAsked
}
