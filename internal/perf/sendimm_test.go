package perf

import (
	"errors"
	"strings"
	"testing"
)

// --send_with_imm: the sender sends with immediate data (perftest 6.29's
// SEND_IMM) and a receiver with the option fails on a message without
// it, as perftest's; the title says Send_imm.
func TestSessionSendImm(t *testing.T) {
	for _, c := range []struct {
		name           string
		p              Params
		srvImm, cliImm bool
		ok             bool
	}{
		{"bw_both", Params{Verb: VerbSend, Test: TestBW, Iters: 100}, true, true, true},
		{"bw_sender_only", Params{Verb: VerbSend, Test: TestBW, Iters: 100}, false, true, true},
		{"bw_receiver_only", Params{Verb: VerbSend, Test: TestBW, Iters: 100}, true, false, false},
		{"bw_bidir", Params{Verb: VerbSend, Test: TestBW, Iters: 100, Bidir: true}, true, true, true},
		{"lat_both", Params{Verb: VerbSend, Test: TestLat, Iters: 50}, true, true, true},
		{"lat_one_side", Params{Verb: VerbSend, Test: TestLat, Iters: 50}, false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := c.p, c.p
			srv.SendImm, cli.SendImm = c.srvImm, c.cliImm
			s, cl, _ := runPair(t, srv, cli)
			if !c.ok {
				var pe *PeerError
				if err := errors.Join(s.err, cl.err); !errors.As(err, &pe) || !strings.Contains(err.Error(), "without immediate data") {
					t.Fatalf("server: %v client: %v; want a receiver to fail without immediate data", s.err, cl.err)
				}
				return
			}
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			if !strings.Contains(cl.out.String(), "Send_imm ") {
				t.Fatalf("title:\n%s", cl.out.String())
			}
		})
	}
	p := Params{Verb: VerbWrite, Test: TestBW, Server: true, SendImm: true}
	p.Defaults()
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--send_with_imm") {
		t.Fatalf("write --send_with_imm: %v", err)
	}
}
