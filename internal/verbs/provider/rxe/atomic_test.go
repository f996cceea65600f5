package rxe

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestRxeAtomicWQE: an atomic WR lands in the rxe send WQE as
// struct rxe_send_wr's wr.atomic (rdma_user_rxe.h) and iova, and its
// completion passes Poll's checks with its opcode and 8 bytes.
func TestRxeAtomicWQE(t *testing.T) {
	for _, c := range []struct {
		op   verbs.Opcode
		want verbs.WCOpcode
	}{{verbs.OpAtomicCmpSwap, verbs.WCCompSwap}, {verbs.OpAtomicFetchAdd, verbs.WCFetchAdd}} {
		qp, cq, k := newSyncFakeRxe(t, 8, 16)
		wr := verbs.SendWR{WRID: 42, Opcode: c.op, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 8, LKey: 3},
			RemoteAddr: 0x7f00_0000_1238, RKey: 0xabcd, CompareAdd: 0x1122334455667788, Swap: 0x99aabbccddeeff00}
		if err := qp.PostSend([]verbs.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
		slot := qp.sq.slot(0)
		le := binary.LittleEndian
		for _, f := range []struct {
			name string
			off  int
			got  uint64
			want uint64
		}{
			{"opcode", rxeSWQEOpcode, uint64(le.Uint32(slot[rxeSWQEOpcode:])), uint64(c.op)},
			{"remote_addr", 24, le.Uint64(slot[24:]), wr.RemoteAddr},
			{"compare_add", 32, le.Uint64(slot[32:]), wr.CompareAdd},
			{"swap", 40, le.Uint64(slot[40:]), wr.Swap},
			{"rkey", 48, uint64(le.Uint32(slot[48:])), uint64(wr.RKey)},
			{"iova", rxeSWQEIOVA, le.Uint64(slot[rxeSWQEIOVA:]), wr.RemoteAddr},
			{"dma.length", rxeSWQEDMALength, uint64(le.Uint32(slot[rxeSWQEDMALength:])), 8},
		} {
			if f.got != f.want {
				t.Errorf("%v: %s at %d is %#x, want %#x", c.op, f.name, f.off, f.got, f.want)
			}
		}
		k.step()
		wcs := make([]verbs.WC, 2)
		n, err := cq.Poll(wcs)
		if err != nil || n != 1 || wcs[0].Opcode != c.want || wcs[0].WRID != 42 || wcs[0].ByteLen != 8 {
			t.Errorf("%v: Poll %d %v %+v, want one completion with opcode %d", c.op, n, err, wcs[0], c.want)
		}
	}
}

// TestRxeAtomicRefused: an atomic WR that CheckAtomic refuses leaves the
// SQ untouched.
func TestRxeAtomicRefused(t *testing.T) {
	good := verbs.SendWR{Opcode: verbs.OpAtomicFetchAdd, SGE: verbs.SGE{Addr: 0x1000, Length: 8, LKey: 1}, RemoteAddr: 0x2000, RKey: 1}
	qp, _, _ := newSyncFakeRxe(t, 8, 16)
	bad := good
	bad.SGE.Length = 4
	if err := qp.PostSend([]verbs.SendWR{bad}); !errors.Is(err, verbs.ErrAtomicLength) {
		t.Errorf("rxe PostSend: %v, want %v", err, verbs.ErrAtomicLength)
	}
	if p := qp.sq.loadProd(); p != 0 {
		t.Errorf("producer index %d after a refused post, want 0", p)
	}
}
