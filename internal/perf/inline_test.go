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

// TestResolveInlineAsPerftest: under perftest's name, ctx_set_max_inline
// to the letter: on rxe (part 0) a read or atomic test, or a user's -I,
// gets inline 0 and perftest's note; a write or send at the default gets
// 0 silently; a ConnectX keeps perftest's defaults and the user's -I.
func TestResolveInlineAsPerftest(t *testing.T) {
	const note = "Device not recognized to implement inline feature. Disabling it"
	for _, c := range []struct {
		verb   Verb
		test   Test
		inline int
		part   uint32
		want   int
		note   string
	}{
		{VerbRead, TestBW, InlineDeviceDefault, 0, 0, note},
		{VerbAtomic, TestLat, InlineDeviceDefault, 0, 0, note},
		{VerbWrite, TestLat, InlineDeviceDefault, 0, 0, ""},
		{VerbWrite, TestLat, 64, 0, 0, note},
		{VerbWrite, TestLat, InlineDeviceDefault, 4119, defInlineWrite, ""},
		{VerbSend, TestLat, 64, 4119, 64, ""},
		{VerbRead, TestLat, InlineDeviceDefault, 4119, 0, ""},
	} {
		p := &Params{Verb: c.verb, Test: c.test, Inline: c.inline}
		p.Report.AsPerftest = true
		got := p.ResolveInlineAsPerftest(PortAttr{VendorPartID: c.part})
		if p.Inline != c.want || got != c.note || !p.Report.AsPerftest {
			t.Errorf("%v %v -I %d part %d: inline %d note %q", c.verb, c.test, c.inline, c.part, p.Inline, got)
		}
	}
}
