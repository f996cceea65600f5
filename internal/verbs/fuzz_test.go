package verbs

import (
	"encoding/binary"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
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

// FuzzQueryQPResp: any 128 bytes the kernel writes as a QUERY_QP answer
// decode without panicking, the path's QoS fields from their offsets.
func FuzzQueryQPResp(f *testing.F) {
	// An RC QP in RTS as rxe reports it after 'perf write --tclass 104 -S 3
	// -u 18 --retry_count 5 --flow_label 0x12345'.
	seed := make([]byte, 128)
	copy(seed, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1})
	binary.LittleEndian.PutUint32(seed[16:], 0x12345)
	seed[24], seed[25], seed[26], seed[27], seed[30], seed[31] = 1, 0xff, 104, 3, 1, 1
	seed[108], seed[117], seed[118] = 3, 18, 5
	f.Add(seed)
	f.Add(make([]byte, 128))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 128 {
			b = append(b, make([]byte, 128-len(b))...)
		}
		var r abiQueryQPResp
		copy(rawmem.Of(&r), b)
		q := r.decode()
		if q.Dest.TrafficClass != b[26] || q.Dest.SL != b[27] || q.Timeout != b[117] || q.RetryCnt != b[118] ||
			q.Dest.FlowLabel != binary.LittleEndian.Uint32(b[16:]) || q.PKeyIndex != binary.LittleEndian.Uint16(b[104:]) ||
			q.State != QPState(b[108]) || q.Dest.IsGlobal != (b[30] != 0) {
			t.Fatalf("decoded %+v from % x", q, b)
		}
	})
}
