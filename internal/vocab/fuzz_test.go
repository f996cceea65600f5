package vocab

import (
	"strconv"
	"strings"
	"testing"
)

// The parsers read kernel files (ports/N/rate, node_guid, uverbsN/dev,
// gid_attrs/types/N, link_layer): no panic on any input, and what they
// accept must print back consistently. The seeds are real sysfs values
// and broken ones, and run as ordinary tests.

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"10 Gb/sec (1X FDR10)", "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "40 Gb/sec (4X)",
		"56 Gb/sec (4X FDR)", "fast", "NaN Gb/sec (4X EDR)", "1 Gb/sec (", "", "400 Gb/sec (4X NDR)", "Inf Gb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := ParseRate(s)
		if !ok {
			return
		}
		if r.Gbps < 0 || r.Gbps != r.Gbps || r.Gbps > MaxRateGbps {
			t.Fatalf("%q: rate %v out of bounds", s, r.Gbps)
		}
		if strings.ContainsAny(r.Width+r.Speed, " \t\n()") {
			t.Fatalf("%q: width %q speed %q", s, r.Width, r.Speed)
		}
		// Printed back as the kernel would, it parses to the same rate.
		again := strconv.FormatFloat(r.Gbps, 'f', -1, 64) + " Gb/sec"
		if r.Width != "" {
			again += " (" + strings.TrimSpace(r.Width+" "+r.Speed) + ")"
		}
		if r2, ok := ParseRate(again); !ok || r2 != r {
			t.Fatalf("%q -> %+v -> %q -> %+v", s, r, again, r2)
		}
	})
}

func FuzzParseGUID(f *testing.F) {
	for _, s := range []string{"a86c:01ff:fecc:54ed", "A86C:01FF:FECC:54ED", "441c:deff:fe1f:1adc", "0000:0000:0000:0000",
		"a86c:01ff:fecc", "+86c:01ff:fecc:54ed", "", ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, ok := ParseGUID(s)
		if !ok {
			return
		}
		if g.String() != strings.ToLower(s) {
			t.Fatalf("ParseGUID(%q) prints %q", s, g.String())
		}
		if back, ok := ParseGUID(g.String()); !ok || back != g {
			t.Fatalf("%q does not round-trip", s)
		}
	})
}

func FuzzParseSmall(f *testing.F) {
	for _, s := range []string{"231:192", "231:192\n", "231", ":", "99999999999:1", "IB/RoCE v1", "RoCE v2",
		"InfiniBand", "Ethernet", "Unknown", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ma, mi, ok := ParseDevNum(s); ok {
			if a, b, ok := ParseDevNum(itoa(ma) + ":" + itoa(mi)); !ok || a != ma || b != mi {
				t.Fatalf("ParseDevNum(%q) = %d:%d does not round-trip", s, ma, mi)
			}
		}
		ll, ok := ParseLinkLayer(s)
		if ok && ll.String() != s {
			t.Fatalf("ParseLinkLayer(%q) prints %q", s, ll.String())
		}
		if g, ok := ParseSysfsGIDType(s, ll); ok && (!g.Known() || g.Sysfs() != s) {
			t.Fatalf("ParseSysfsGIDType(%q) = %v", s, g)
		}
		_ = Counter(s)
	})
}
