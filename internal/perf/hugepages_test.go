package perf

import "testing"

// --use_hugepages and --odp reach the device's Setup (verbsDevice then
// maps the buffer with verbs.NewHugeBuffer, tested in internal/verbs, and
// registers it with verbs.AccessOnDemand).
func TestSessionHugePages(t *testing.T) {
	for _, huge := range []bool{false, true} {
		p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, HugePages: huge, ODP: huge}
		var sd, cd *fakeDevice
		s, c, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) { sd, cd = srv.Dev.(*fakeDevice), cli.Dev.(*fakeDevice) })
		if s.err != nil || c.err != nil {
			t.Fatalf("server: %v client: %v", s.err, c.err)
		}
		if sd.cfg.HugePages != huge || cd.cfg.HugePages != huge || sd.cfg.ODP != huge || cd.cfg.ODP != huge {
			t.Fatalf("--use_hugepages --odp %v: Setup got %+v and %+v", huge, sd.cfg, cd.cfg)
		}
	}
}
