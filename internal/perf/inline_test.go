package perf

import "testing"

// The cases are perftest's ctx_set_max_inline for the devices this data
// path drives; the rxe row is what the captured ib_write_lat prints
// (testdata/perftest/perftest_write_lat_client.txt: "Max inline data :
// 0[B]").
func TestResolveInline(t *testing.T) {
	const rxe, cx5, cx7, bf2 = 0, 4119, 4129, 41686
	cases := []struct {
		name   string
		verb   Verb
		test   Test
		conn   Transport
		inline int
		part   uint32
		want   int
	}{
		{"rxe write lat", VerbWrite, TestLat, RC, InlineDeviceDefault, rxe, 0},
		{"rxe send lat", VerbSend, TestLat, RC, InlineDeviceDefault, rxe, 0},
		{"cx5 write lat", VerbWrite, TestLat, RC, InlineDeviceDefault, cx5, 220},
		{"cx5 write lat UC", VerbWrite, TestLat, UC, InlineDeviceDefault, cx5, 220},
		{"cx7 send lat RC", VerbSend, TestLat, RC, InlineDeviceDefault, cx7, 236},
		{"cx7 send lat UD", VerbSend, TestLat, UD, InlineDeviceDefault, cx7, 188},
		{"bf2 read lat", VerbRead, TestLat, RC, InlineDeviceDefault, bf2, 0},
		{"cx5 write bw", VerbWrite, TestBW, RC, InlineDeviceDefault, cx5, 0},
		{"cx5 send bw", VerbSend, TestBW, RC, InlineDeviceDefault, cx5, 0},
		{"user -I 0 on cx5", VerbWrite, TestLat, RC, 0, cx5, 0},
		{"user -I 64 on rxe", VerbWrite, TestLat, RC, 64, rxe, 64},
		{"unknown part", VerbWrite, TestLat, RC, InlineDeviceDefault, 4114, 0},
	}
	for _, c := range cases {
		p := Params{Verb: c.verb, Test: c.test, Conn: c.conn, Inline: c.inline}
		p.ResolveInline(PortAttr{VendorPartID: c.part})
		if p.Inline != c.want {
			t.Errorf("%s: Inline = %d, want %d", c.name, p.Inline, c.want)
		}
	}
}

// Defaults leaves the device's choice to Run, and Validate accepts it.
func TestDefaultsKeepInlineForDevice(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestLat, Inline: -1, Server: true}
	p.Defaults()
	if p.Inline != InlineDeviceDefault || p.UserInline {
		t.Fatalf("after Defaults: Inline %d, UserInline %v; want %d, false", p.Inline, p.UserInline, InlineDeviceDefault)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	p.Inline = -2
	if err := p.Validate(); err == nil {
		t.Fatal("Validate accepted -I -2")
	}
}
