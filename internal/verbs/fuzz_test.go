package verbs

import (
	"encoding/binary"
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// FuzzParseGIDTable: whatever QUERY_GID_TABLE returns (count and bytes),
// decoding neither panics nor reads beyond the buffer.
func FuzzParseGIDTable(f *testing.F) {
	// Two rxe entries as seen on 6.1: fe80:: and ::ffff:10.77.0.1, RoCE v2.
	seed := make([]byte, 64)
	copy(seed, []byte{0xfe, 0x80})
	binary.LittleEndian.PutUint32(seed[16:], 0)
	binary.LittleEndian.PutUint32(seed[20:], 1)
	binary.LittleEndian.PutUint32(seed[24:], 2)
	binary.LittleEndian.PutUint32(seed[28:], 4)
	copy(seed[32+10:], []byte{0xff, 0xff, 10, 77, 0, 1})
	binary.LittleEndian.PutUint32(seed[48:], 1)
	binary.LittleEndian.PutUint32(seed[52:], 1)
	binary.LittleEndian.PutUint32(seed[56:], 2)
	f.Add(seed, uint64(2))
	f.Add(seed, ^uint64(0))
	f.Add(seed[:40], uint64(2))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, out []byte, num uint64) {
		g := parseGIDTable(out, num)
		if uint64(len(g)) > num || len(g) > len(out)/32 {
			t.Fatalf("%d entries from %d bytes, count %d", len(g), len(out), num)
		}
		if num == 2 && len(out) == 64 && (g[0].Port != binary.LittleEndian.Uint32(out[20:]) || g[1].Index != binary.LittleEndian.Uint32(out[48:])) {
			t.Fatalf("decoded %+v", g)
		}
	})
}

// FuzzParseSysfs: the sysfs dev and node_type parsers accept what the
// kernel writes and reject the rest without panicking.
func FuzzParseSysfs(f *testing.F) {
	for _, s := range []string{"231:192\n", "231:193", "1: CA\n", "4: RNIC", ":", "a:b", "", "99999999999:1", "7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if maj, min, ok := vocab.ParseDevNum(s); ok && s == "231:192\n" && (maj != 231 || min != 192) {
			t.Fatalf("%q -> %d:%d", s, maj, min)
		}
		if v := parseNodeType(s); s == "1: CA\n" && v != 1 {
			t.Fatalf("%q -> %d", s, v)
		}
	})
}
