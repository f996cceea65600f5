// Package promtext writes the Prometheus text exposition format, version
// 0.0.4: # HELP and # TYPE lines, then one line per series. It exists so
// that rdmactl does not link client_golang, whose package init (a default
// registry with Go and process collectors, protobuf descriptors, procfs)
// every other command of the one binary would pay for.
//
// Only what the exporter uses: counters, gauges and untyped series with
// labels, no histograms, summaries, timestamps or exemplars.
package promtext

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ContentType is the HTTP Content-Type of the text format 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Type is a metric family's type as # TYPE names it.
type Type uint8

const (
	Gauge Type = iota
	Counter
	Untyped
)

func (t Type) String() string {
	switch t {
	case Gauge:
		return "gauge"
	case Counter:
		return "counter"
	}
	return "untyped"
}

// Desc describes one metric family: its name, help, type and label names.
type Desc struct {
	name   string
	help   string
	typ    Type
	labels []string
}

// NewDesc checks name and label names against the format's alphabet
// ([a-zA-Z_:][a-zA-Z0-9_:]* and [a-zA-Z_][a-zA-Z0-9_]*, no "__" prefix,
// no label twice) and returns the family's Desc.
func NewDesc(name, help string, t Type, labels ...string) (*Desc, error) {
	if !ValidMetricName(name) {
		return nil, fmt.Errorf("invalid metric name %q", name)
	}
	if !utf8.ValidString(help) {
		return nil, fmt.Errorf("%s: help is not UTF-8", name)
	}
	for i, l := range labels {
		if !ValidLabelName(l) {
			return nil, fmt.Errorf("%s: invalid label name %q", name, l)
		}
		if slices.Contains(labels[:i], l) {
			return nil, fmt.Errorf("%s: label %q twice", name, l)
		}
	}
	return &Desc{name: name, help: help, typ: t, labels: slices.Clone(labels)}, nil
}

// MustDesc is NewDesc for names fixed in the source; it panics on a bad one.
func MustDesc(name, help string, t Type, labels ...string) *Desc {
	d, err := NewDesc(name, help, t, labels...)
	if err != nil {
		panic(err)
	}
	return d
}

// Name is the family's metric name.
func (d *Desc) Name() string { return d.name }

// ValidMetricName reports whether s is a metric name of the classic
// alphabet: [a-zA-Z_:][a-zA-Z0-9_:]*.
func ValidMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ValidLabelName reports whether s is a label name a scrape may carry:
// [a-zA-Z_][a-zA-Z0-9_]*, and not "__"-prefixed (reserved).
func ValidLabelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Metric is one series: a Desc, its label values in the Desc's order, and
// the value.
type Metric struct {
	Desc   *Desc
	Values []string
	Value  float64
}

// NewMetric checks that values match d's labels and are UTF-8.
func NewMetric(d *Desc, v float64, values ...string) (Metric, error) {
	if len(values) != len(d.labels) {
		return Metric{}, fmt.Errorf("%s: %d label values for %d labels", d.name, len(values), len(d.labels))
	}
	for _, s := range values {
		if !utf8.ValidString(s) {
			return Metric{}, fmt.Errorf("%s: label value %q is not UTF-8", d.name, s)
		}
	}
	return Metric{Desc: d, Values: values, Value: v}, nil
}

// ErrDuplicate is returned (wrapped) by Write for series it left out: a
// second family of one name with other help, type or labels, or a second
// series with the same label values.
var ErrDuplicate = errors.New("duplicate series")

// Write writes ms as families sorted by name, each with its # HELP and
// # TYPE lines once, its series in the order given. The lines of one
// family must be together in the format; ms may interleave families.
// A series that would make the exposition invalid (see ErrDuplicate) is
// left out and reported in the error, after everything else was written.
func Write(w io.Writer, ms []Metric) error {
	idx := make([]int, len(ms))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(ms[a].Desc.name, ms[b].Desc.name) })

	var buf []byte
	var dropped int
	var first string
	seen := map[string]bool{}
	var fam *Desc
	for _, i := range idx {
		m := &ms[i]
		if fam == nil || m.Desc.name != fam.name {
			fam = m.Desc
			clear(seen)
			if fam.help != "" { // as Prometheus's encoder: no empty # HELP
				buf = append(buf, "# HELP "...)
				buf = append(buf, fam.name...)
				buf = append(buf, ' ')
				buf = appendEscaped(buf, fam.help, false)
				buf = append(buf, '\n')
			}
			buf = append(buf, "# TYPE "...)
			buf = append(buf, fam.name...)
			buf = append(buf, ' ')
			buf = append(buf, fam.typ.String()...)
			buf = append(buf, '\n')
		}
		line := len(buf)
		buf = appendSeries(buf, fam, m)
		if (m.Desc != fam && !sameFamily(m.Desc, fam)) || seen[string(buf[line:])] {
			buf = buf[:line]
			if dropped == 0 {
				first = m.Desc.name
			}
			dropped++
			continue
		}
		seen[string(buf[line:])] = true
		buf = appendFloat(append(buf, ' '), m.Value)
		buf = append(buf, '\n')
		if len(buf) > 32<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if _, err := w.Write(buf); err != nil {
		return err
	}
	if dropped > 0 {
		return fmt.Errorf("%w: %d left out, the first of %s", ErrDuplicate, dropped, first)
	}
	return nil
}

func sameFamily(a, b *Desc) bool {
	return a.name == b.name && a.help == b.help && a.typ == b.typ && slices.Equal(a.labels, b.labels)
}

// appendSeries appends name{l1="v1",...} (no braces without labels).
func appendSeries(buf []byte, d *Desc, m *Metric) []byte {
	buf = append(buf, d.name...)
	if len(d.labels) == 0 {
		return buf
	}
	buf = append(buf, '{')
	for i, l := range d.labels {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, l...)
		buf = append(buf, '=', '"')
		buf = appendEscaped(buf, m.Values[i], true)
		buf = append(buf, '"')
	}
	return append(buf, '}')
}

// appendEscaped escapes as the format wants: \ and newline in help text,
// and " too in label values.
func appendEscaped(buf []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			buf = append(buf, '\\', '\\')
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '"' && quote:
			buf = append(buf, '\\', '"')
		default:
			buf = append(buf, c)
		}
	}
	return buf
}

// appendFloat formats v as Prometheus's own encoder does: +Inf, -Inf,
// NaN, 0 for both zeros, else Go's shortest 'g' form (1e+06 for a
// million).
func appendFloat(buf []byte, v float64) []byte {
	switch {
	case v == 0:
		return append(buf, '0')
	case math.IsNaN(v):
		return append(buf, "NaN"...)
	case math.IsInf(v, 1):
		return append(buf, "+Inf"...)
	case math.IsInf(v, -1):
		return append(buf, "-Inf"...)
	}
	return strconv.AppendFloat(buf, v, 'g', -1, 64)
}
