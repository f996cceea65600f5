package perf

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const fixtures = "testdata/perftest/"

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(fixtures + name)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return string(b)
}

var addrRe = regexp.MustCompile(`^ (local|remote) address: LID (\S+) QPN (\S+) PSN (\S+)(?: OUT (\S+))?(?: RKey (\S+) VAddr (\S+))?$`)

// fixtureDests extracts the address/GID lines perftest printed.
func fixtureDests(t *testing.T, name string) []Dest {
	t.Helper()
	var out []Dest
	sc := bufio.NewScanner(strings.NewReader(readFixture(t, name)))
	for sc.Scan() {
		line := sc.Text()
		if m := addrRe.FindStringSubmatch(line); m != nil {
			hex := func(s string) uint64 {
				if s == "" {
					return 0
				}
				v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
				if err != nil {
					t.Fatalf("%q: %v", s, err)
				}
				return v
			}
			out = append(out, Dest{LID: uint16(hex(m[2])), QPN: uint32(hex(m[3])), PSN: uint32(hex(m[4])), OutReads: uint16(hex(m[5])), RKey: uint32(hex(m[6])), VAddr: hex(m[7])})
			continue
		}
		if strings.HasPrefix(line, " GID: ") {
			parts := strings.Split(strings.TrimPrefix(line, " GID: "), ":")
			if len(parts) != 16 {
				t.Fatalf("GID line %q", line)
			}
			for i, p := range parts {
				v, _ := strconv.Atoi(p) // perftest prints GID bytes in decimal
				out[len(out)-1].GID[i] = byte(v)
			}
		}
	}
	return out
}

// cKeyGID is perftest's KEY_PRINT_FMT_GID, written out independently.
func cKeyGID(d Dest) string {
	s := fmt.Sprintf("%04x:%04x:%06x:%06x:%08x:%016x", d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr)
	for _, g := range d.GID {
		s += fmt.Sprintf(":%02x", g)
	}
	return s + fmt.Sprintf(":%08x:", d.SRQN) + "\x00"
}

func TestKeyRecordFromFixtures(t *testing.T) {
	for _, f := range []string{"perftest_write_bw_client.txt", "perftest_read_bw_server.txt", "perftest_send_bw_client.txt", "perftest_write_lat_server.txt"} {
		ds := fixtureDests(t, f)
		if len(ds) != 2 {
			t.Fatalf("%s: %d addresses", f, len(ds))
		}
		for _, d := range ds {
			if d.OutReads == 0 {
				d.OutReads = 1
			}
			b := encodeKey(&d, keyForm{gid: true})
			if len(b) != 108 || string(b) != cKeyGID(d) {
				t.Fatalf("%s: encoded %q\nwant        %q", f, b, cKeyGID(d))
			}
			got, err := parseKey(b, keyForm{gid: true})
			if err != nil || got != d {
				t.Fatalf("%s: parse %+v, %v; want %+v", f, got, err, d)
			}
		}
	}
}

func TestKeyRecordLIDForm(t *testing.T) {
	d := Dest{LID: 1, OutReads: 2, QPN: 3, PSN: 4, RKey: 5, VAddr: 6, SRQN: 7}
	b := encodeKey(&d, keyForm{gid: false})
	if string(b) != "0001:0002:000003:000004:00000005:0000000000000006:00000007\x00" {
		t.Fatalf("got %q", b)
	}
	got, err := parseKey(b, keyForm{gid: false})
	if err != nil || got != d {
		t.Fatalf("got %+v %v", got, err)
	}
}

// TestKeyRecordDV checks --data_validation's records against perftest
// 6.29's KEY_PRINT_FMT_DV and KEY_PRINT_FMT_GID_DV
// (src/perftest_communication.h): the tail markers' address after vaddr.
func TestKeyRecordDV(t *testing.T) {
	d := Dest{LID: 1, OutReads: 2, QPN: 3, PSN: 4, RKey: 5, VAddr: 6, TailMarkers: 0x7f0000000040, SRQN: 7}
	for _, c := range []struct {
		form keyForm
		want string
	}{
		{keyForm{dv: true}, "0001:0002:000003:000004:00000005:0000000000000006:00007f0000000040:00000007\x00"},
		{keyForm{gid: true, dv: true}, "0001:0002:000003:000004:00000005:0000000000000006:00007f0000000040:" +
			"00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02:00000007:\x00"},
	} {
		if c.form.gid {
			d.GID = [16]byte{10: 0xff, 11: 0xff, 12: 10, 15: 2}
		}
		b := encodeKey(&d, c.form)
		if string(b) != c.want || len(b) != keySize(c.form) {
			t.Fatalf("%+v: got %q (%d bytes)\nwant %q", c.form, b, len(b), c.want)
		}
		got, err := parseKey(b, c.form)
		if err != nil || got != d {
			t.Fatalf("%+v: parse %+v, %v", c.form, got, err)
		}
		if _, err := parseKey(b, keyForm{gid: c.form.gid}); err == nil {
			t.Errorf("%+v: a record with tail markers parsed as one without", c.form)
		}
	}
	if keySize(keyForm{dv: true}) != 76 || keySize(keyForm{gid: true, dv: true}) != 125 {
		t.Errorf("sizes %d, %d; want perftest's KEY_MSG_SIZE_DV 76 and KEY_MSG_SIZE_GID_DV 125", keySize(keyForm{dv: true}), keySize(keyForm{gid: true, dv: true}))
	}
}

func TestKeyRecordRejects(t *testing.T) {
	good := string(encodeKey(&Dest{QPN: 0x11, PSN: 1, RKey: 2, VAddr: 3, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10}}, keyForm{gid: true}))
	cases := map[string]string{
		"short":        good[:107],
		"no NUL":       good[:107] + "x",
		"non-hex":      "zz" + good[2:],
		"missing ':'":  good[:4] + ";" + good[5:],
		"qpn 0":        strings.Replace(good, "000011", "000000", 1),
		"LID for GID":  string(encodeKey(&Dest{QPN: 1}, keyForm{gid: false})) + strings.Repeat("\x00", 49),
		"junk at tail": good[:106] + "1\x00",
	}
	for name, rec := range cases {
		if _, err := parseKey([]byte(rec), keyForm{gid: true}); err == nil {
			t.Errorf("%s: accepted %q", name, rec)
		}
	}
}

func TestVersionRecord(t *testing.T) {
	b := encodeVersion(OurVersion)
	if len(b) != 16 || string(b[:12]) != "6.27 rdmactl" || b[12] != 0 {
		t.Fatalf("%q", b)
	}
	v, err := parseVersion(b)
	if err != nil || !v.Rdmactl || v.Number != 6.27 {
		t.Fatalf("%+v %v", v, err)
	}
	v, err = parseVersion(encodeVersion("6.06"))
	if err != nil || v.Rdmactl || v.Number != 6.06 {
		t.Fatalf("%+v %v", v, err)
	}
	for _, bad := range [][]byte{encodeVersion("5.60"), encodeVersion("abc"), []byte("0123456789abcdef"), encodeVersion("6.0\x01"), encodeVersion("")} {
		if _, err := parseVersion(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestSysAndMTURecords(t *testing.T) {
	if v, err := parseSysValue("x", encodeInt32(4096), 256, 1<<24); err != nil || v != 4096 {
		t.Fatal(v, err)
	}
	for _, bad := range []int32{0, -4096, 3000, 1 << 25} {
		if _, err := parseSysValue("x", encodeInt32(bad), 256, 1<<24); err == nil {
			t.Errorf("accepted %d", bad)
		}
	}
	if string(encodeMTU(1024)) != "3\x00" {
		t.Fatalf("%q", encodeMTU(1024))
	}
	for e := 1; e <= 5; e++ {
		m, err := parseMTU([]byte{byte('0' + e), 0})
		if err != nil || m != 128<<e {
			t.Fatal(m, err)
		}
	}
	for _, bad := range []string{"0\x00", "6\x00", "3x", "\x00\x00"} {
		if _, err := parseMTU([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestBWReportRecord(t *testing.T) {
	r := BWReport{Size: 65536, Iters: 5000, BWPeak: 24.51, BWAvg: 20.45, MsgRate: 0.000327}
	f := [5][]byte{encodeU64(r.Size), encodeU64(r.Iters), encodeF64(r.BWPeak), encodeF64(r.BWAvg), encodeF64(r.MsgRate)}
	// perftest sends doubles byte-swapped on little-endian hosts: big-endian.
	if f[0][5] != 1 || f[2][0] != 0x40 {
		t.Fatalf("not big-endian: %x %x", f[0], f[2])
	}
	got, err := parseBWReport(f)
	if err != nil || got != r {
		t.Fatalf("%+v %v", got, err)
	}
	f[3] = encodeF64(math.NaN())
	if _, err := parseBWReport(f); err == nil {
		t.Fatal("accepted NaN")
	}
	f[3] = encodeF64(-1)
	if _, err := parseBWReport(f); err == nil {
		t.Fatal("accepted negative")
	}
}

func TestParamRecord(t *testing.T) {
	a := &Params{Verb: VerbWrite, Test: TestBW, Size: 65536, Iters: 5000, QPs: 1, PostList: 1}
	b := *a
	if err := checkPeerParams(a, encodeParams(&b)); err != nil {
		t.Fatal(err)
	}
	b.Size = 4096
	err := checkPeerParams(a, encodeParams(&b))
	if err == nil || !strings.Contains(err.Error(), "-s") {
		t.Fatalf("size mismatch: %v", err)
	}
	b = *a
	b.Verb = VerbRead
	if err := checkPeerParams(a, encodeParams(&b)); err == nil {
		t.Fatal("verb mismatch accepted")
	}
}

func TestBestGID(t *testing.T) {
	d := newFakeDevice(newFakeFabric(), 2)
	if g := BestGID(d.port.GIDs, false); g != 1 {
		t.Fatalf("best GID %d, want 1 (IPv4-mapped, as perftest picks on the VM)", g)
	}
	if g := BestGID(d.port.GIDs, true); g != 0 {
		t.Fatalf("ipv6: %d", g)
	}
	if g := BestGID(nil, false); g != -1 {
		t.Fatal(g)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"2": 2, "4K": 4096, "64k": 65536, "8M": 8 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0", "x", "-1", "2G1", "3G"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// The fuzz targets: every parser of peer input must reject or accept
// without panicking, and what it accepts must re-encode to the same bytes.

func FuzzParseKey(f *testing.F) {
	f.Add(encodeKey(&Dest{QPN: 0x11, PSN: 0xd9fca7, RKey: 0x2d2, VAddr: 0x55dcddc04000, OutReads: 1, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 15: 2}}, keyForm{gid: true}), true, false)
	f.Add(encodeKey(&Dest{LID: 1, QPN: 3}, keyForm{gid: false}), false, false)
	f.Add([]byte(strings.Repeat(":", 108)), true, false)
	f.Add(encodeKey(&Dest{QPN: 0x11, PSN: 7, RKey: 0x2d2, VAddr: 0x7f0000001000, TailMarkers: 0x7f0000030040, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10}}, keyForm{gid: true, dv: true}), true, true)
	f.Add(encodeKey(&Dest{LID: 1, QPN: 3, TailMarkers: 0x40}, keyForm{dv: true}), false, true)
	f.Fuzz(func(t *testing.T, b []byte, gid, dv bool) {
		form := keyForm{gid: gid, dv: dv}
		d, err := parseKey(b, form)
		if err != nil {
			return
		}
		if d.QPN > 0xffffff || d.PSN > 0xffffff {
			t.Fatalf("field out of range: %+v", d)
		}
		if !strings.EqualFold(string(encodeKey(&d, form)), string(b)) {
			t.Fatalf("accepted %q, re-encodes as %q", b, encodeKey(&d, form))
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	f.Add(encodeVersion("6.06"))
	f.Add(encodeVersion(OurVersion))
	f.Add(encodeVersion("6.29"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseVersion(b)
		if err == nil && (v.Number < minPeerVersion || math.IsNaN(v.Number)) {
			t.Fatalf("accepted %q as %v", b, v)
		}
	})
}

func FuzzParseRecords(f *testing.F) {
	f.Add(encodeU64(65536), encodeU64(5000), encodeF64(1.5), encodeF64(1.25), encodeF64(0.0003), []byte("3\x00"), encodeInt32(4096))
	f.Fuzz(func(t *testing.T, a, b, c, d, e, mtu, sys []byte) {
		if r, err := parseBWReport([5][]byte{a, b, c, d, e}); err == nil {
			if r.Size > maxMsgSize || math.IsNaN(r.BWAvg) || r.BWAvg < 0 {
				t.Fatalf("accepted %+v", r)
			}
		}
		if m, err := parseMTU(mtu); err == nil && !validMTU(m) {
			t.Fatalf("accepted MTU %d", m)
		}
		if v, err := parseSysValue("x", sys, 256, 1<<24); err == nil && (v < 256 || v&(v-1) != 0) {
			t.Fatalf("accepted %d", v)
		}
	})
}

func FuzzCheckPeerParams(f *testing.F) {
	p := &Params{Verb: VerbWrite, Test: TestBW, Size: 65536, Iters: 5000, QPs: 1, PostList: 1}
	f.Add(encodeParams(p))
	f.Add(make([]byte, paramRecordSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = checkPeerParams(p, b)
	})
}
