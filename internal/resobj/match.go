package resobj

import (
	"fmt"
	"strconv"
	"strings"
)

// The values of rdma's filters: lists of numbers and ranges, or of names
// (iproute2 rdma/utils.c). Which field of an object each filter reads is
// the object's filter table (Filter).

// Range is Min..Max inclusive; a single number has Min == Max.
type Range struct{ Min, Max uint32 }

// Ranges is "1-3,7": numbers and ranges separated by commas.
type Ranges []Range

// ParseRanges reads "N", "N-M" and comma-separated lists of them. Empty
// items, a range backwards, or anything but digits, ',' and '-' is an
// error: rdma accepts some of these and ignores them, rdmactl says so.
func ParseRanges(s string) (Ranges, error) {
	if s == "" {
		return nil, fmt.Errorf("empty list: want numbers and ranges, as in 1-3,7")
	}
	var out Ranges
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parseU32Item(lo, s)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseU32Item(hi, s); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%q: range %d-%d runs backwards", s, a, b)
			}
		}
		out = append(out, Range{a, b})
	}
	return out, nil
}

func parseU32Item(x, all string) (uint32, error) {
	if x == "" || strings.Trim(x, "0123456789") != "" {
		return 0, fmt.Errorf("%q: want numbers and ranges, as in 1-3,7", all)
	}
	n, err := strconv.ParseUint(x, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: %s is not a 32-bit number", all, x)
	}
	return uint32(n), nil
}

// Has says whether n is in one of the ranges.
func (rs Ranges) Has(n uint32) bool {
	for _, r := range rs {
		if r.Min <= n && n <= r.Max {
			return true
		}
	}
	return false
}

// Match is a set of rdma filters, as res's flags set them; a nil or empty
// field matches all. Each object's filters (Filter) read it.
type Match struct {
	Port  *uint32           // link DEV/PORT: QPs and CM IDs of this port
	Nums  map[string]Ranges // Numbers filters: pid, lqpn, users...
	Names map[string][]string
}

// SetNum adds the number filter key=value (value as ParseRanges reads it).
func (m *Match) SetNum(key, value string) error {
	rs, err := ParseRanges(value)
	if err != nil {
		return fmt.Errorf("%s %w", key, err)
	}
	if m.Nums == nil {
		m.Nums = map[string]Ranges{}
	}
	m.Nums[key] = rs
	return nil
}

// SetNames adds the string filter key=NAME[,NAME...].
func (m *Match) SetNames(key, value string) {
	if m.Names == nil {
		m.Names = map[string][]string{}
	}
	m.Names[key] = strings.Split(value, ",")
}

// empty: m keeps every object.
func (m Match) empty() bool { return m.Port == nil && len(m.Nums) == 0 && len(m.Names) == 0 }

// keeps says whether an object with filters fs passes every one.
func (m Match) keeps(fs []Filter) bool {
	for _, f := range fs {
		if !f.keeps(m) {
			return false
		}
	}
	return true
}
