package verbs

import (
	"errors"
	"testing"
)

// TestAtomicRefused: atomic WRs that no device accepts are refused
// (the providers call CheckAtomic before they touch a ring).
func TestAtomicRefused(t *testing.T) {
	good := SendWR{Opcode: OpAtomicFetchAdd, SGE: SGE{Addr: 0x1000, Length: 8, LKey: 1}, RemoteAddr: 0x2000, RKey: 1}
	for _, c := range []struct {
		name string
		mod  func(*SendWR)
		rc   bool
		want error
	}{
		{"ok", func(*SendWR) {}, true, nil},
		{"UC", func(*SendWR) {}, false, ErrAtomicNotRC},
		{"inline", func(w *SendWR) { w.Flags |= SendInline }, true, ErrInlineAtomic},
		{"length 16", func(w *SendWR) { w.SGE.Length = 16 }, true, ErrAtomicLength},
		{"length 4", func(w *SendWR) { w.SGE.Length = 4 }, true, ErrAtomicLength},
		{"misaligned", func(w *SendWR) { w.RemoteAddr += 4 }, true, ErrAtomicAlign},
	} {
		w := good
		c.mod(&w)
		if err := CheckAtomic(&w, c.rc); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
