package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// --ipv6: the automatic GID choice takes the port's IPv6 GID instead of
// the IPv4-mapped one, on both sides.
func TestSessionIPv6GID(t *testing.T) {
	global := func(ip byte) GIDEntry {
		return GIDEntry{Index: 2, GID: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: ip}, Type: vocab.GIDTypeRoCEv2}
	}
	for _, ipv6 := range []bool{false, true} {
		p := Params{Verb: VerbSend, Test: TestBW, Iters: 50, IPv6: ipv6}
		s, c, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) {
			sd, cd := srv.Dev.(*fakeDevice), cli.Dev.(*fakeDevice)
			sd.port.GIDs = append(sd.port.GIDs, global(1))
			cd.port.GIDs = append(cd.port.GIDs, global(2))
		})
		if s.err != nil || c.err != nil {
			t.Fatalf("--ipv6 %v: server: %v client: %v", ipv6, s.err, c.err)
		}
		want := 1 // the IPv4-mapped GID
		if ipv6 {
			want = 2
		}
		for _, o := range []*sideOut{s, c} {
			if o.res.Info.GIDIndex != want || !strings.Contains(o.out.String(), " GID index       : "+string(rune('0'+want))+"\n") {
				t.Fatalf("--ipv6 %v: GID index %d, want %d:\n%s", ipv6, o.res.Info.GIDIndex, want, o.out.String())
			}
		}
	}
	for _, p := range []Params{{Verb: VerbSend, Test: TestBW, IPv6: true, UserGID: true, GIDIndex: 1}, {Verb: VerbSend, Test: TestBW, IPv6: true, RDMACM: true}} {
		p.Server = true
		p.Defaults()
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--ipv6") {
			t.Errorf("%+v: %v", p, err)
		}
	}
}
