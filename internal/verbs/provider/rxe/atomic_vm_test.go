//go:build vmtest

package rxe

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestRxeAtomics: a sequence of CMP_AND_SWAP and FETCH_AND_ADD from rxe1
// on a word of rxe0's memory, each returning the old value into the
// requester's SGE: the final word and every returned value are what the
// sequence implies (a failed compare leaves the word alone). Then an
// atomic on an MR and QP without remote atomic access fails with a remote
// access error completion, not a signal.
func TestRxeAtomics(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe1", verbs.QPTypeRC, 2*vmHalf, 16, 0)
	b := newSide(t, "rxe0", verbs.QPTypeRC, 2*vmHalf, 16, 0)
	// The target: memory of b's registered for remote atomics.
	tgt := vmRegMRAccess(t, b.pd, 8192, verbs.AccessAll|verbs.AccessRemoteAtomic)
	ai, bi := a.info(100+a.qp.QPN()), b.info(200+b.qp.QPN())
	acc := verbs.AccessAll | verbs.AccessRemoteAtomic
	if err := a.qp.Connect(verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, Access: acc, RdAtomic: 4, Local: ai, Remote: bi}); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, Access: acc, RdAtomic: 4, Local: bi, Remote: ai}); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	const off = 4096 + 8
	word := tgt.buf[off : off+8]
	le.PutUint64(word, 5)
	type step struct {
		op             verbs.Opcode
		cmpAdd, swap   uint64
		wantOld, after uint64
	}
	steps := []step{
		{verbs.OpAtomicCmpSwap, 5, 0xdead_beef_0000_0007, 5, 0xdead_beef_0000_0007}, // equal: swapped
		{verbs.OpAtomicCmpSwap, 5, 9, 0xdead_beef_0000_0007, 0xdead_beef_0000_0007}, // not equal: kept
		{verbs.OpAtomicFetchAdd, 3, 0, 0xdead_beef_0000_0007, 0xdead_beef_0000_000a},
		{verbs.OpAtomicFetchAdd, 1 << 63, 0, 0xdead_beef_0000_000a, 0x5ead_beef_0000_000a}, // wraps in 64 bits
		{verbs.OpAtomicCmpSwap, 0x5ead_beef_0000_000a, 0, 0x5ead_beef_0000_000a, 0},
	}
	for i := 0; i < 100; i++ { // then 100 increments of 1, as perf atomic posts them
		steps = append(steps, step{verbs.OpAtomicFetchAdd, 1, 0, uint64(i), uint64(i + 1)})
	}
	for i, s := range steps {
		ret := a.mr.buf[64*i : 64*i+8]
		le.PutUint64(ret, 0x0101010101010101)
		wr := verbs.SendWR{WRID: uint64(i + 1), Opcode: s.op, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: a.mr.addr(64 * i), Length: 8, LKey: a.mr.lkey},
			RemoteAddr: tgt.addr(off), RKey: tgt.rkey, CompareAdd: s.cmpAdd, Swap: s.swap}
		if err := a.qp.PostSend([]verbs.SendWR{wr}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		wc := a.waitWC(t, uint64(i+1))
		wantOp := map[verbs.Opcode]verbs.WCOpcode{verbs.OpAtomicCmpSwap: verbs.WCCompSwap, verbs.OpAtomicFetchAdd: verbs.WCFetchAdd}[s.op]
		if wc.Opcode != wantOp || wc.QPNum != a.qp.QPN() {
			t.Errorf("step %d: WC %+v, want opcode %d", i, wc, wantOp)
		}
		if got := le.Uint64(ret); got != s.wantOld {
			t.Fatalf("step %d (%v %#x/%#x): returned %#x, want %#x", i, s.op, s.cmpAdd, s.swap, got, s.wantOld)
		}
		if got := le.Uint64(word); got != s.after {
			t.Fatalf("step %d: target word %#x, want %#x", i, got, s.after)
		}
	}
	if got := le.Uint64(word); got != 100 {
		t.Fatalf("final word %d, want 100", got)
	}
	// An MR registered without remote atomics: the responder refuses.
	plain := b.mr.buf[vmHalf+off : vmHalf+off+8]
	le.PutUint64(plain, 100)
	wr := verbs.SendWR{WRID: 999, Opcode: verbs.OpAtomicFetchAdd, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 8, LKey: a.mr.lkey},
		RemoteAddr: b.mr.addr(vmHalf + off), RKey: b.mr.rkey, CompareAdd: 1}
	if err := a.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	wc := pollAny(t, a)
	if wc.WRID != 999 || wc.Status == 0 {
		t.Fatalf("atomic on an MR without REMOTE_ATOMIC: %+v, want an error completion", wc)
	}
	if got := le.Uint64(plain); got != 100 {
		t.Fatalf("refused atomic changed the word to %d", got)
	}
	t.Logf("refused: status %d (%s)", wc.Status, fmt.Sprint(wc.Status))
}

// vmRegMRAccess registers n bytes of fresh memory in pd with the access
// rights given; both are released when the test ends.
func vmRegMRAccess(t testing.TB, pd *verbs.PD, n int, access verbs.Access) *vmMR {
	t.Helper()
	buf, err := verbs.NewBuffer(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := buf.Close(); err != nil {
			t.Errorf("buffer close: %v", err)
		}
	})
	mr, err := pd.RegMR(buf, access)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mr.Close(); err != nil {
			t.Errorf("dereg MR: %v", err)
		}
	})
	return &vmMR{buf: buf.Bytes(), base: buf.Addr(), lkey: mr.LKey, rkey: mr.RKey}
}

// pollAny waits for one completion of any status.
func pollAny(t *testing.T, s *side) verbs.WC {
	t.Helper()
	for i := 0; i < 20_000_000; i++ {
		n, err := s.cq.Poll(s.wcs[:1])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return s.wcs[0]
		}
	}
	t.Fatal("no completion")
	return verbs.WC{}
}
