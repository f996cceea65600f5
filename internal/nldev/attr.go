package nldev

import (
	"encoding/binary"
	"strings"
)

// attrs is one level of a netlink attribute list in kernel order; repeated
// types (the entries of a nested table) are kept in order. Lookups scan it: NLDEV
// lists are short (at most a few dozen), and a map per list was a quarter
// of counters' allocations at 128 ports (one list per hw counter).
type attrs struct {
	list []attr
}

// raw is the payload of attribute t, nil if absent.
func (a attrs) raw(t uint16) []byte { d, _ := a.get(t); return d }

// get is the payload of the last attribute of type t, as a kernel that
// repeated one would have it overwrite the first.
func (a attrs) get(t uint16) ([]byte, bool) {
	for i := len(a.list) - 1; i >= 0; i-- {
		if a.list[i].typ == t {
			return a.list[i].data, true
		}
	}
	return nil, false
}

type attr struct {
	typ  uint16
	data []byte
}

const (
	nlaHdrLen   = 4
	nlaTypeMask = 0x3fff // drops NLA_F_NESTED and NLA_F_NET_BYTEORDER
	nlaAlignTo  = 4
)

// parseAttrs decodes an attribute list. A truncated or malformed attribute
// ends the list there: what came before is kept. A first pass counts the
// attributes so that the list is one allocation (append's doubling made
// six for a device's answer of about 20).
func parseAttrs(b []byte) attrs {
	n := 0
	for rest, ok := b, true; ; n++ {
		if _, rest, ok = nextAttr(rest); !ok {
			break
		}
	}
	if n == 0 {
		return attrs{}
	}
	a := attrs{list: make([]attr, 0, n)}
	for {
		at, rest, ok := nextAttr(b)
		if !ok {
			return a
		}
		a.list = append(a.list, at)
		b = rest
	}
}

// nextAttr is the first attribute of b and what follows it (nil after the
// last); false if b holds no whole attribute.
func nextAttr(b []byte) (attr, []byte, bool) {
	if len(b) < nlaHdrLen {
		return attr{}, nil, false
	}
	l := int(binary.NativeEndian.Uint16(b))
	if l < nlaHdrLen || l > len(b) {
		return attr{}, nil, false
	}
	at := attr{binary.NativeEndian.Uint16(b[2:]) & nlaTypeMask, b[nlaHdrLen:l]}
	if al := (l + nlaAlignTo - 1) &^ (nlaAlignTo - 1); al < len(b) {
		return at, b[al:], true
	}
	return at, nil, true
}

func (a attrs) u8(t uint16) *uint8 {
	if d, ok := a.get(t); ok && len(d) == 1 {
		v := d[0]
		return &v
	}
	return nil
}

func (a attrs) u32(t uint16) *uint32 {
	if d, ok := a.get(t); ok && len(d) == 4 {
		v := binary.NativeEndian.Uint32(d)
		return &v
	}
	return nil
}

func (a attrs) u64(t uint16) *uint64 {
	if d, ok := a.get(t); ok && len(d) == 8 {
		v := binary.NativeEndian.Uint64(d)
		return &v
	}
	return nil
}

// uint accepts a u32 or a u64 (attributes whose width differs between the
// header and the kernel's nla_put, such as UVERBS_DRIVER_ID).
func (a attrs) uint(t uint16) *uint64 {
	if v := a.u64(t); v != nil {
		return v
	}
	if v := a.u32(t); v != nil {
		w := uint64(*v)
		return &w
	}
	return nil
}

// str returns a NUL-terminated string attribute, "" if absent.
func (a attrs) str(t uint16) string {
	d, ok := a.get(t)
	if !ok {
		return ""
	}
	s := string(d)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// nested returns the attribute list inside attribute t.
func (a attrs) nested(t uint16) attrs {
	d, _ := a.get(t)
	return parseAttrs(d)
}

// entries returns the nested entries of type entry inside the table t
// (RES_QP -> RES_QP_ENTRY...).
func (a attrs) entries(table, entry uint16) []attrs {
	var out []attrs
	for _, e := range a.nested(table).list {
		if e.typ == entry {
			out = append(out, parseAttrs(e.data))
		}
	}
	return out
}

// encoder builds a request's attribute list.
type encoder struct{ b []byte }

func (e *encoder) put(t uint16, d []byte) {
	l := nlaHdrLen + len(d)
	var h [nlaHdrLen]byte
	binary.NativeEndian.PutUint16(h[0:], uint16(l))
	binary.NativeEndian.PutUint16(h[2:], t)
	e.b = append(e.b, h[:]...)
	e.b = append(e.b, d...)
	for len(e.b)%nlaAlignTo != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) u32(t uint16, v uint32) {
	var d [4]byte
	binary.NativeEndian.PutUint32(d[:], v)
	e.put(t, d[:])
}

func (e *encoder) u64(t uint16, v uint64) {
	var d [8]byte
	binary.NativeEndian.PutUint64(d[:], v)
	e.put(t, d[:])
}

func (e *encoder) u8(t uint16, v uint8) { e.put(t, []byte{v}) }

func (e *encoder) str(t uint16, s string) { e.put(t, append([]byte(s), 0)) }
