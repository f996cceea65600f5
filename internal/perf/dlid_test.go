package perf

import (
	"strings"
	"testing"
)

// --dlid: the peer's LID is replaced, in the remote address lines (and
// the QPs' address) of the side that gives it, not of the other.
func TestSessionDLID(t *testing.T) {
	srv := Params{Verb: VerbWrite, Test: TestBW, Iters: 50}
	cli := srv
	cli.DLID = 0x1234
	s, c, _ := runPair(t, srv, cli)
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	if !strings.Contains(c.out.String(), " remote address: LID 0x1234 ") {
		t.Fatalf("client:\n%s", c.out.String())
	}
	if strings.Contains(s.out.String(), "LID 0x1234") {
		t.Fatalf("server:\n%s", s.out.String())
	}
	for _, v := range []int{-1, 0x10000} {
		p := Params{Verb: VerbWrite, Test: TestBW, Server: true, DLID: v}
		p.Defaults()
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--dlid") {
			t.Errorf("--dlid %d: %v", v, err)
		}
	}
}
