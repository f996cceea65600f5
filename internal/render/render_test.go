package render

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

func TestJSON(t *testing.T) {
	v := []map[string]any{{"comm": "<a&b>", "n": 1}}
	var b bytes.Buffer
	if err := JSON(&b, v, false); err != nil || b.String() != `[{"comm":"<a&b>","n":1}]`+"\n" {
		t.Errorf("compact: %v %q", err, b.String())
	}
	b.Reset()
	if err := JSON(&b, v, true); err != nil || b.String() != "[\n  {\n    \"comm\": \"<a&b>\",\n    \"n\": 1\n  }\n]\n" {
		t.Errorf("pretty: %v %q", err, b.String())
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "DEV", "PORT", "STATE")
	tb.Row("rxe0", 1, "ACTIVE")
	tb.Row("rxe10", nil, "")
	tb.Row("a\tb", uint32(2), "x\ny")
	tb.Row(uint64(18446744073709551615), -3, 1.5)
	tb.Row(true, int64(-7), errors.New("e\tf"))
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "DEV                   PORT  STATE\n" +
		"rxe0                  1     ACTIVE\n" +
		"rxe10                 -     -\n" +
		"a b                   2     x y\n" +
		"18446744073709551615  -3    1.5\n" +
		"true                  -7    e f\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestNewDevInfo: the conversion from what the device answered keeps the
// ports asked for, their GIDs (an empty list, not null, without any), and
// names a RoCE v1/IB GID by the port's link layer.
func TestNewDevInfo(t *testing.T) {
	q := inventory.DeviceQuery{
		Device:   verbs.Device{Name: "mlx5_0", Uverbs: "uverbs0", DriverID: verbs.DriverMLX5, Driver: "mlx5", ABI: 1},
		NodeType: 1, BoardID: "MT_0000000012",
		Attr:           &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{PhysPortCnt: 2, FWVer: 16<<32 | 35<<16 | 2000}},
		NumCompVectors: 8,
		Ports: []inventory.PortQuery{
			{Attr: &verbs.PortAttr{Port: 1, PortCaps: verbs.PortCaps{LinkLayer: 1, State: 4}}, GIDs: []verbs.GIDEntry{{Port: 1, Index: 0, Type: vocab.GIDTypeRoCEv1, GID: [16]byte{0: 0xfe, 1: 0x80, 15: 1}}}},
			{Attr: &verbs.PortAttr{Port: 2, PortCaps: verbs.PortCaps{LinkLayer: 2, State: 1}}},
		},
	}
	d := NewDevInfo(&q)
	if d.Ifname != "mlx5_0" || d.TransportName != "InfiniBand" || d.FWVer != "16.35.2000" || d.BoardID == nil || *d.BoardID != "MT_0000000012" || d.NumCompVectors != 8 {
		t.Errorf("device %+v", d)
	}
	if len(d.Ports) != 2 || d.Ports[0].GIDs[0].Type != "IB" || d.Ports[0].GIDs[0].GID != "fe80::1" || d.Ports[1].GIDs == nil || len(d.Ports[1].GIDs) != 0 {
		t.Errorf("ports %+v", d.Ports)
	}
	var b bytes.Buffer
	if err := DevInfoText(&b, []DevInfo{d, d}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if bytes.Count(b.Bytes(), []byte("hca_id: mlx5_0\n")) != 2 || !bytes.Contains(b.Bytes(), []byte("\n\nhca_id: mlx5_0\n")) ||
		!bytes.Contains(b.Bytes(), []byte("  board_id:                    MT_0000000012\n")) ||
		!bytes.Contains(b.Bytes(), []byte("    GID[  0]:                  fe80::1, IB\n")) {
		t.Errorf("text:\n%s", out)
	}
}

// TestTableEscapesControls: control characters in a cell (a captured
// tree's device name, firmware or counter name) are printed escaped,
// never written to the terminal; tabs and line ends become spaces; other
// text, UTF-8 included, is as it was.
func TestTableEscapesControls(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "NAME", "FW")
	tb.Row("rxe\x1b[2J0", "1.0\x00")
	tb.Row("a\tb\nc", "\u009b31mred\x7f")
	tb.Row("rxé0", "ok")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME         FW\n" +
		"rxe\\x1b[2J0  1.0\\x00\n" +
		"a b c        \\u009b31mred\\x7f\n" +
		"rxé0         ok\n"
	if b.String() != want {
		t.Errorf("table\n%q\nwant\n%q", b.String(), want)
	}
	for i, c := range []string{"\x1b", "\u0085", "\x7f", "\x1f"} {
		if strings.ContainsAny(b.String(), c) {
			t.Errorf("control %d (%q) reached the output", i, c)
		}
	}
}
