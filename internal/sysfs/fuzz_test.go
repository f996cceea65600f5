package sysfs

import (
	"strings"
	"testing"
)

// The fuzzers feed arbitrary file content to each parser: no panic, and
// what is accepted must be consistent. The f.Add seeds are real sysfs
// values (and broken ones) and run as ordinary tests.

func FuzzParseGID(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:0479:3cff:fee4:2f19", "0000:0000:0000:0000:0000:ffff:0a4d:0001",
		"0000:0000:0000:0000:0000:0000:0000:0000", "fe80::1", "fe80:0000:0000", "+e80:0000:0000:0000:0479:3cff:fee4:2f19", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw, ok := parseGID(s)
		if !ok {
			return
		}
		g := GID{Raw: raw, RawOK: true}
		if !strings.EqualFold(g.String(), s) {
			t.Fatalf("parseGID(%q) round-trips to %q", s, g.String())
		}
		_ = g.Addr()
		_, _ = BestGID([]GID{g}, false)
	})
}

func FuzzParseUint(f *testing.F) {
	for _, s := range []string{"0x0", "0x00010000", "0x2659e848", "0", "12", "0x", "-1", "99999999999", " 5 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := parseU32(s); ok && v == nil {
			t.Fatal("ok with nil")
		}
		_, _ = parseUint(s, 64)
	})
}

func FuzzParseNumLabel(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "1: CA", "4:", "x: y", "3: PortConfigurationTraining", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, l, ok := parseNumLabel(s)
		if ok && l == "" {
			t.Fatalf("%q: ok with empty label", s)
		}
	})
}

func FuzzParseMisc(f *testing.F) {
	for _, s := range []string{"231:192", "231", "a86c:01ff:fecc:54ed", "A86C:01FF:FECC:54ED", "18446744073709551615",
		"18446744073709551616", "-7", "+7", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g := guidText(s); g != "" && len(g) != 19 {
			t.Fatalf("%q: guid %q", s, g)
		}
		if _, ok := parseCounter(s); ok && strings.ContainsAny(s, "+-") {
			t.Fatalf("%q: signed counter accepted", s)
		}
	})
}
