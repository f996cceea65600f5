package perf

import (
	"strings"
	"testing"
)

// --write_with_imm: writes carry immediate data (perftest 6.29's
// WRITE_IMM), so the receiver posts receives and runs send's loops: bw,
// bidirectional bw and latency run between two sessions; the title says
// RDMA_Write_imm; a side without the option is named as the difference;
// and the option applies to write tests only.
func TestSessionWriteImm(t *testing.T) {
	for _, c := range []struct {
		name           string
		p              Params
		srvImm, cliImm bool
		ok             bool
	}{
		{"bw", Params{Verb: VerbWrite, Test: TestBW, Iters: 200}, true, true, true},
		{"bw_q2", Params{Verb: VerbWrite, Test: TestBW, QPs: 2, Iters: 300}, true, true, true},
		{"bw_bidir", Params{Verb: VerbWrite, Test: TestBW, Iters: 200, Bidir: true}, true, true, true},
		{"lat", Params{Verb: VerbWrite, Test: TestLat, Iters: 100}, true, true, true},
		{"lat_all_sizes", Params{Verb: VerbWrite, Test: TestLat, Iters: 20, AllSizes: true}, true, true, true},
		{"bw_events", Params{Verb: VerbWrite, Test: TestBW, Iters: 200, UseEvent: true}, true, true, true},
		{"lat_events", Params{Verb: VerbWrite, Test: TestLat, Iters: 100, UseEvent: true}, true, true, true},
		{"bw_uc", Params{Verb: VerbWrite, Test: TestBW, Iters: 200, Conn: UC}, true, true, true},
		{"bw_all_sizes", Params{Verb: VerbWrite, Test: TestBW, Iters: 20, AllSizes: true}, true, true, true},
		{"client_only", Params{Verb: VerbWrite, Test: TestBW, Iters: 100}, false, true, false},
		{"server_only", Params{Verb: VerbWrite, Test: TestLat, Iters: 100}, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := c.p, c.p
			srv.WriteImm, cli.WriteImm = c.srvImm, c.cliImm
			s, cl, _ := runPair(t, srv, cli)
			if !c.ok {
				for _, err := range []error{s.err, cl.err} {
					if err == nil || !strings.Contains(err.Error(), "write_imm") {
						t.Fatalf("server: %v client: %v; want both to name write_imm as the difference", s.err, cl.err)
					}
				}
				return
			}
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			for _, out := range []string{s.out.String(), cl.out.String()} {
				if !strings.Contains(out, "RDMA_Write_imm ") {
					t.Fatalf("title:\n%s", out)
				}
			}
			if c.p.Test == TestBW && !strings.Contains(s.out.String(), " RX depth        : ") {
				t.Fatalf("the receiver's header has no RX depth (it posts receives):\n%s", s.out.String())
			}
		})
	}
	p := Params{Verb: VerbRead, Test: TestBW, Server: true, WriteImm: true}
	p.Defaults()
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--write_with_imm") {
		t.Fatalf("read --write_with_imm: %v", err)
	}
}
