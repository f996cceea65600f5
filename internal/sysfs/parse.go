package sysfs

import (
	"strconv"
	"strings"
)

// The parsers below take the content of one sysfs file (already stripped of
// its trailing newline) and report ok=false for anything they do not
// recognise, so that callers can leave the field missing. They are fuzzed
// (fuzz_test.go).

// parseUint parses a number the way the kernel prints them in these files:
// "0x1a" (lid, sm_lid, cap_mask: "%#x" / "0x%08x") or decimal
// (lid_mask_count, sm_sl, counters).
func parseUint(s string, bits int) (uint64, bool) {
	s = strings.TrimSpace(s)
	var (
		v   uint64
		err error
	)
	if h, ok := strings.CutPrefix(s, "0x"); ok {
		if h == "" {
			return 0, false
		}
		v, err = strconv.ParseUint(h, 16, bits)
	} else {
		v, err = strconv.ParseUint(s, 10, bits)
	}
	return v, err == nil
}

func parseU32(s string) (*uint32, bool) {
	v, ok := parseUint(s, 32)
	if !ok {
		return nil, false
	}
	u := uint32(v)
	return &u, true
}

// parseNumLabel splits "4: ACTIVE" (state), "5: LinkUp" (phys_state) and
// "1: CA" (node_type) into the number and the label.
func parseNumLabel(s string) (uint32, string, bool) {
	num, label, found := strings.Cut(s, ":")
	if !found {
		return 0, "", false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 32)
	label = strings.TrimSpace(label)
	if err != nil || label == "" {
		return 0, "", false
	}
	return uint32(n), label, true
}

// parseRate parses ports/N/rate as printed by the kernel's rate_show
// (drivers/infiniband/core/sysfs.c): "%d%s Gb/sec (%dX%s)", e.g.
// "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (1X FDR10)".
// The speed part may be absent ("40 Gb/sec (4X)" on old kernels).
func parseRate(s string) (gbps float64, width, speed string, ok bool) {
	num, rest, found := strings.Cut(s, " Gb/sec")
	if !found {
		return 0, "", "", false
	}
	g, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || g < 0 || g != g || g > 1e9 {
		return 0, "", "", false
	}
	rest = strings.TrimSpace(rest)
	if rest != "" {
		in, okp := strings.CutPrefix(rest, "(")
		in, okc := strings.CutSuffix(in, ")")
		if !okp || !okc {
			return 0, "", "", false
		}
		f := strings.Fields(in)
		if len(f) >= 1 {
			width = f[0]
		}
		if len(f) >= 2 {
			speed = f[1]
		}
		if len(f) > 2 {
			return 0, "", "", false
		}
	}
	return g, width, speed, true
}

// parseGID parses gids/N: eight groups of four hex digits separated by
// colons ("fe80:0000:0000:0000:a86c:01ff:fecc:54ed", the kernel's "%pI6"),
// the same text ibv_devinfo -v prints.
func parseGID(s string) ([16]byte, bool) {
	var raw [16]byte
	groups := strings.Split(s, ":")
	if len(groups) != 8 {
		return raw, false
	}
	for i, g := range groups {
		if len(g) != 4 {
			return raw, false
		}
		v, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return raw, false
		}
		raw[2*i] = byte(v >> 8)
		raw[2*i+1] = byte(v)
	}
	return raw, true
}

// parseDevT parses a "major:minor" dev file (class/infiniband_verbs/uverbsN/dev).
func parseDevT(s string) (major, minor uint32, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(ma), uint32(mi), true
}

// parseGUID checks a node_guid/sys_image_guid value: four groups of four
// hex digits ("a86c:01ff:fecc:54ed", the kernel prints "%04x:%04x:%04x:%04x"),
// which is also how rdma -j shows GUIDs. It returns the lowercased text.
func parseGUID(s string) (string, bool) {
	groups := strings.Split(s, ":")
	if len(groups) != 4 {
		return "", false
	}
	for _, g := range groups {
		if len(g) != 4 {
			return "", false
		}
		if _, err := strconv.ParseUint(g, 16, 16); err != nil {
			return "", false
		}
	}
	return strings.ToLower(s), true
}

// parseCounter parses one counters/ or hw_counters/ file: a decimal u64.
func parseCounter(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
