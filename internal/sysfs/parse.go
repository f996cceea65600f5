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

// parseCounter parses one counters/ or hw_counters/ file: a decimal u64.
func parseCounter(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}
