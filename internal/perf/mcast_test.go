package perf

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// -M takes perftest's form (16 numbers, each as strtoll base 0) or an
// IPv6 address, and only a multicast GID.
func TestParseMGID(t *testing.T) {
	ff02 := [16]byte{0xff, 2, 15: 1}
	for _, s := range []string{"255:2:0:0:0:0:0:0:0:0:0:0:0:0:0:1", "0xff:0x2:0:0:0:0:0:0:0:0:0:0:0:0:0:01", "ff02::1", "FF02:0::1"} {
		g, err := ParseMGID(s)
		if err != nil || g != ff02 {
			t.Errorf("%q: %v, %v", s, g, err)
		}
	}
	for s, want := range map[string]string{
		"0:0:0:0:0:0:0:0:0:0:255:255:239:1:1:1": "not a multicast GID",
		"fe80::1":                               "not a multicast GID",
		"256:2:0:0:0:0:0:0:0:0:0:0:0:0:0:1":     "16 colon-separated bytes",
		"239.1.1.1":                             "16 colon-separated bytes",
		"ff02::1%eth0":                          "16 colon-separated bytes",
		"":                                      "16 colon-separated bytes",
	} {
		if _, err := ParseMGID(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", s, err, want)
		}
	}
}

// The group a side joins: -M's on both sides, else perftest's MCG_GID,
// the client's with its last byte one higher.
func TestMGIDDefault(t *testing.T) {
	p := &Params{Server: true}
	if g := p.mgid(); g != defaultMGID || g[15] != 0 {
		t.Errorf("server: %v", g)
	}
	p.Server = false
	if g := p.mgid(); g[15] != 1 || g[0] != 255 || g[7] != 133 {
		t.Errorf("client: %v", g)
	}
	p.UserMGID, p.MGID = true, [16]byte{0xff, 2, 15: 1}
	if g := p.mgid(); g != p.MGID {
		t.Errorf("-M: %v", g)
	}
}

// perftest's checks of -g, and the title and address lines it prints.
func TestMcastParamsAndHeader(t *testing.T) {
	base := func() *Params {
		p := &Params{Verb: VerbSend, Conn: UD, QPs: 1, Mcast: true}
		return p
	}
	for _, c := range []struct {
		set  func(*Params)
		want string
	}{
		{func(p *Params) { p.Verb = VerbWrite }, "send tests only"},
		{func(p *Params) { p.Conn = RC }, "UD"},
		{func(p *Params) { p.Bidir = true }, "one-way"},
		{func(p *Params) { p.QPs = 2 }, "one QP"},
		{func(p *Params) { p.RDMACM = true }, "RDMA CM"},
		{func(p *Params) { p.Reversed = true }, "--reversed"},
	} {
		p := base()
		c.set(p)
		if err := p.validateMcast(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
	}
	if err := base().validateMcast(); err != nil {
		t.Error(err)
	}
	// --connectionless: perftest 6.29's receiver, server side of a
	// multicast send bandwidth run with --run_infinitely.
	cl := func() *Params {
		p := base()
		p.Connectionless, p.Server, p.RunInfinitely = true, true, true
		return p
	}
	if err := cl().validateMcast(); err != nil {
		t.Errorf("--connectionless: %v", err)
	}
	for _, set := range []func(*Params){
		func(p *Params) { p.Server = false },
		func(p *Params) { p.Mcast = false },
		func(p *Params) { p.RunInfinitely = false },
		func(p *Params) { p.Test = TestLat },
	} {
		p := cl()
		set(p)
		if err := p.validateMcast(); err == nil || !strings.Contains(err.Error(), "--connectionless") {
			t.Errorf("%+v: %v", p, err)
		}
	}
	g := [16]byte{0xff, 2, 15: 1}
	local := []Dest{{QPN: mcastQPN, PSN: 0x618e94, GID: g}}
	remote := []Dest{{QPN: 0x11, PSN: 0x2dab3b, GID: [16]byte{0xfe, 0x80, 15: 1}}}
	p := base()
	p.Server = true
	var b strings.Builder
	writeHeader(&b, p, &Info{Device: "rxe0", Local: local, Remote: remote, WithGID: true})
	for _, want := range []string{
		"                    Send BW Multicast Test\n MultiCast runs on UD!\n Dual-port       : OFF",
		" local address: LID 0000 QPN 0xffffff PSN 0x618e94\n MGID: 255:02:00:00:00:00:00:00:00:00:00:00:00:00:00:01\n",
		" remote address: LID 0000 QPN 0x0011 PSN 0x2dab3b\n GID: 254:128:",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("server header lacks %q:\n%s", want, b.String())
		}
	}
	// A connectionless listener has no peer: no remote address.
	b.Reset()
	writeHeader(&b, p, &Info{Device: "rxe0", Local: local, WithGID: true})
	if strings.Contains(b.String(), "remote address") || !strings.Contains(b.String(), " MGID: 255:02:") {
		t.Errorf("listener header:\n%s", b.String())
	}
	p.Server, p.Test = false, TestLat
	b.Reset()
	writeHeader(&b, p, &Info{Device: "rxe1", Local: remote, Remote: local, WithGID: true})
	for _, want := range []string{"Send Latency Multicast Test\n", " local address: LID 0000 QPN 0x0011 PSN 0x2dab3b\n GID: ", "QPN 0xffffff PSN 0x618e94\n MGID: 255:02:"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("client header lacks %q:\n%s", want, b.String())
		}
	}
}

// On InfiniBand a multicast run is refused before any exchange (the SA
// join rdmactl does not send): a RefusedError on both sides.
func TestSessionMcastOnIB(t *testing.T) {
	p := Params{Verb: VerbSend, Test: TestBW, Conn: UD, Iters: 50, Device: "fake0", IBPort: 1, QPs: 1, Mcast: true}
	s, c, _ := runPairWith(t, p, p, 0, func(ss, cs *Session) {
		for _, x := range []*Session{ss, cs} {
			x.Dev.(*fakeDevice).port.LinkLayer = vocab.LinkLayerInfiniBand
		}
	})
	for _, e := range []error{s.err, c.err} {
		var re *RefusedError
		if !errors.As(e, &re) || !strings.Contains(e.Error(), "-g on InfiniBand") {
			t.Errorf("%v, want a RefusedError", e)
		}
	}
}
