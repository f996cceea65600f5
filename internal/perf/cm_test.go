package perf

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// perftest 6.06's rdma_write_keys record for a known dest, laid out by
// hand from struct pingpong_dest (int lid, out_reads, qpn, psn; unsigned
// rkey; 4 bytes padding; unsigned long long vaddr; union ibv_gid gid;
// unsigned srqn; int gid_index), every integer big-endian.
func perftestKeyCM() []byte {
	b := make([]byte, 56)
	be := binary.BigEndian
	be.PutUint32(b[0:], 0)
	be.PutUint32(b[4:], 16)
	be.PutUint32(b[8:], 0x17)
	be.PutUint32(b[12:], 0xf8a7df)
	be.PutUint32(b[16:], 0x5e3)
	copy(b[20:24], []byte{0xde, 0xad, 0xbe, 0xef}) // perftest leaves the padding uninitialised
	be.PutUint64(b[24:], 0x7fdd30439028)
	copy(b[32:48], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1})
	be.PutUint32(b[48:], 0)
	be.PutUint32(b[52:], 1)
	return b
}

func TestKeyCM(t *testing.T) {
	d, err := parseKeyCM(perftestKeyCM())
	if err != nil {
		t.Fatal(err)
	}
	want := Dest{OutReads: 16, QPN: 0x17, PSN: 0xf8a7df, RKey: 0x5e3, VAddr: 0x7fdd30439028,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 15: 1}}
	if d != want {
		t.Fatalf("parsed %+v, want %+v", d, want)
	}
	// Ours is perftest's with zero padding.
	mine := encodeKeyCM(&want, 1, false)
	ref := perftestKeyCM()
	copy(ref[20:24], []byte{0, 0, 0, 0})
	if !bytes.Equal(mine, ref) {
		t.Fatalf("encoded\n%x\nwant\n%x", mine, ref)
	}
	if _, err := parseKeyCM(ref[:55]); err == nil {
		t.Fatal("55 bytes accepted")
	}
	bad := perftestKeyCM()
	bad[8] = 1 // QPN above 24 bits
	if _, err := parseKeyCM(bad); err == nil || !strings.Contains(err.Error(), "24 bits") {
		t.Fatalf("QPN 0x01000017: %v", err)
	}
}

// TestKeyCMTail: perftest 6.29's record, laid out by hand from its struct
// pingpong_dest (src/perftest_resources.h): tail_markers_vaddr after
// vaddr, the rest 8 bytes on.
func TestKeyCMTail(t *testing.T) {
	old := perftestKeyCM()
	b := append(append(append([]byte{}, old[:32]...), 0, 0, 0x7f, 0xdd, 0x30, 0x44, 0, 0x40), old[32:]...)
	d, err := parseKeyCM(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Dest{OutReads: 16, QPN: 0x17, PSN: 0xf8a7df, RKey: 0x5e3, VAddr: 0x7fdd30439028, TailMarkers: 0x7fdd30440040,
		GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 15: 1}}
	if d != want {
		t.Fatalf("parsed %+v, want %+v", d, want)
	}
	copy(b[20:24], []byte{0, 0, 0, 0})
	if mine := encodeKeyCM(&want, 1, true); !bytes.Equal(mine, b) {
		t.Fatalf("encoded\n%x\nwant\n%x", mine, b)
	}
	if _, err := parseKeyCM(b[:60]); err == nil {
		t.Fatal("60 bytes accepted")
	}
}

func FuzzParseKeyCM(f *testing.F) {
	f.Add(perftestKeyCM())
	f.Add(make([]byte, 56))
	f.Add(make([]byte, 64)) // perftest >= 2026-03 (tail_markers_vaddr)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseKeyCM(b)
		if err != nil {
			return
		}
		// What parses re-encodes to the same fields.
		e := encodeKeyCM(&d, 0, len(b) == keySizeCMTail)
		if !bytes.Equal(e[:20], b[:20]) || !bytes.Equal(e[24:len(b)-8], b[24:len(b)-8]) {
			t.Fatalf("round trip changed the record:\n%x\n%x", b, e)
		}
	})
}

// The CM's attribute bits 21 to 23 (meant for the kernel's own RoCE
// code) are not passed to the legacy MODIFY_QP; bits 0 to 20 are.
func TestLegacyMask(t *testing.T) {
	a := rdmacm.QPAttr{Mask: 1<<0 | 1<<7 | 1<<8 | 1<<12 | 1<<17 | 1<<20 | 1<<21 | 1<<23}
	if got := a.Mask & legacyMask; got != verbs.QPAttrMask(1<<0|1<<7|1<<8|1<<12|1<<17|1<<20) {
		t.Fatalf("mask %#x", got)
	}
}

// TestDataConnCM: the data QPs' connection parameters carry the READ
// depth for READ and the atomics (without it the kernel's CM gives the
// target QP no remote atomic access and no responder resources), 0 for
// the rest, and the srq flag on a side that receives through an SRQ, as
// perftest and librdmacm set them.
func TestDataConnCM(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want cmConn
	}{
		{Params{Verb: VerbRead}, cmConn{rd: 16, retry: 7}},
		{Params{Verb: VerbAtomic}, cmConn{rd: 16, retry: 7}},
		{Params{Verb: VerbWrite}, cmConn{retry: 7}},
		{Params{Verb: VerbSend, UseSRQ: true, Server: true}, cmConn{retry: 7, srq: true}},
		{Params{Verb: VerbSend, UseSRQ: true}, cmConn{retry: 7}}, // a bw client only sends: no SRQ
		{Params{Verb: VerbSend, UseSRQ: true, Test: TestLat}, cmConn{retry: 7, srq: true}},
		{Params{Verb: VerbAtomic, QoS: QoS{RetryCnt: 3, UserRetry: true}}, cmConn{rd: 16, retry: 3}},
	} {
		c.p.RDMACM = true
		c.p.Host = "x"
		c.p.Defaults()
		if got := dataConnCM(&c.p, 16); got != c.want {
			t.Errorf("%s %s srq=%t server=%t: %+v, want %+v", c.p.Verb, c.p.Test, c.p.UseSRQ, c.p.Server, got, c.want)
		}
	}
	if got := dataConnCM(&Params{Verb: VerbRead}, 300); got.rd != 255 {
		t.Errorf("depth 300 became %d, want 255 (one byte on the wire)", got.rd)
	}
}
