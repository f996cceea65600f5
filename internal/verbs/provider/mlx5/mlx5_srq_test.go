package mlx5

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// srqCQE writes a receive CQE for the SRQ WQE ctr of QP q.
func srqCQE(m *mlx5Model, q *mlx5QP, ctr uint16, n uint32) {
	var cqe [64]byte
	binary.BigEndian.PutUint32(cqe[mlx5CQESopDropQPN:], q.qpn)
	binary.BigEndian.PutUint16(cqe[mlx5CQEWQECounter:], ctr)
	binary.BigEndian.PutUint32(cqe[mlx5CQEByteCnt:], n)
	m.writeCQE(cqe[:], mlx5CQERespSend)
}

// TestMLX5SRQ: as a device would, complete posted SRQ WQEs in a random
// order (the CQE's wqe_counter names each): every completion returns its
// WR's id, the free list hands out only WQEs that are not outstanding,
// the doorbell record counts the posts, and each WQE is
// mlx5_wqe_srq_next_seg then the data segment.
func TestMLX5SRQ(t *testing.T) {
	s, err := mlx5NewSRQ(7, "mlx5test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if s.max != 8 || s.Capacity() != 7 {
		t.Fatalf("max %d capacity %d, want 8 and 7", s.max, s.Capacity())
	}
	q, cq, _ := mlx5TestQP(t, 8, 0, 0, 64)
	q.srq = s
	m := &mlx5Model{q: q, cq: cq}
	rng := rand.New(rand.NewPCG(1, 2))
	outstanding := map[uint16]uint64{}
	wcs := make([]verbs.WC, 8)
	next := uint64(1)
	for round := 0; round < 200; round++ {
		for s.posted < s.Capacity() {
			wr := []verbs.RecvWR{{WRID: next, SGE: verbs.SGE{Addr: 0x1000 + next*64, Length: 64, LKey: 9}}}
			if err := s.PostRecv(wr); err != nil {
				t.Fatal(err)
			}
			var idx uint16 = 0xffff
			for i := uint16(0); i < uint16(s.max); i++ {
				if s.wqe[i].live && s.wqe[i].wrid == next {
					idx = i
				}
			}
			if _, dup := outstanding[idx]; dup || idx == 0xffff {
				t.Fatalf("WR %d in WQE %d, which is outstanding (or none)", next, idx)
			}
			w := s.buf[uint32(idx)*mlx5SRQStride:]
			if binary.BigEndian.Uint32(w[16:]) != 64 || binary.BigEndian.Uint32(w[20:]) != 9 || binary.BigEndian.Uint64(w[24:]) != 0x1000+next*64 {
				t.Fatalf("WQE %d: % x", idx, w[:32])
			}
			outstanding[idx] = next
			next++
		}
		if err := s.PostRecv([]verbs.RecvWR{{}}); !errors.Is(err, verbs.ErrQueueFull) {
			t.Fatalf("post into a full SRQ: %v", err)
		}
		if got := bswap32(s.dbr); got != uint32(next-1) {
			t.Fatalf("doorbell record %d, want %d posts", got, next-1)
		}
		// Complete one to three of them, in any order.
		for k := 1 + rng.IntN(3); k > 0; k-- {
			var pick uint16
			for idx := range outstanding {
				pick = idx
				break
			}
			srqCQE(m, q, pick, 10)
			n, err := cq.Poll(wcs)
			if err != nil || n != 1 || wcs[0].WRID != outstanding[pick] || wcs[0].Opcode != verbs.WCRecv || wcs[0].ByteLen != 10 {
				t.Fatalf("completion of WQE %d: %d %v %+v, want WR %d", pick, n, err, wcs[0], outstanding[pick])
			}
			delete(outstanding, pick)
		}
	}
}

func bswap32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

// TestMLX5SRQFaults: a CQE naming an SRQ WQE beyond the buffer, or one
// not outstanding, or a length beyond the posted one, is a QueueError.
func TestMLX5SRQFaults(t *testing.T) {
	for _, c := range []struct {
		name  string
		ctr   uint16
		n     uint32
		fault verbs.QueueFault
	}{
		{"counter beyond", 8, 1, verbs.FaultWQECounter},
		{"not posted", 3, 1, verbs.FaultNoReceivePosted},
		{"too long", 0, 65, verbs.FaultCompletionLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := mlx5NewSRQ(7, "mlx5test")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Release()
			q, cq, _ := mlx5TestQP(t, 8, 0, 0, 64)
			q.srq = s
			m := &mlx5Model{q: q, cq: cq}
			if err := s.PostRecv([]verbs.RecvWR{{WRID: 1, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}}}); err != nil {
				t.Fatal(err)
			}
			srqCQE(m, q, c.ctr, c.n)
			_, err = cq.Poll(make([]verbs.WC, 2))
			var qe *verbs.QueueError
			if !errors.As(err, &qe) || qe.Fault != c.fault {
				t.Fatalf("got %v, want fault %d", err, c.fault)
			}
		})
	}
	// A broken free list (a stray write into the buffer) is refused, not followed.
	s, err := mlx5NewSRQ(7, "mlx5test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	binary.BigEndian.PutUint16(s.buf[mlx5SRQNextIndex:], 0x4000)
	err = s.PostRecv([]verbs.RecvWR{{WRID: 1, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}}})
	if !errors.Is(err, verbs.ErrQueueCorrupt) {
		t.Fatalf("broken free list: %v", err)
	}
	if err2 := s.PostRecv([]verbs.RecvWR{{WRID: 1}}); err2 != err {
		t.Fatalf("second post: %v, want the same error", err2)
	}
}

// FuzzMLX5SRQ: any sequence of receive completions (wqe counters and
// lengths as a device, or a corruption, might report) and re-posts keeps
// the SRQ consistent: no panic, a completion is accepted only for a live
// WQE, the outstanding count matches the live WQEs, and the free list
// never hands out a live one.
func FuzzMLX5SRQ(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 0, 0xff, 0xff, 3, 64})
	f.Add([]byte{7, 1, 7, 1, 8, 0, 0, 65})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s, err := mlx5NewSRQ(7, "mlx5fuzz")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Release()
		wrid := uint64(0)
		post := func() {
			wrid++
			err := s.PostRecv([]verbs.RecvWR{{WRID: wrid, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}}})
			if err != nil && !errors.Is(err, verbs.ErrQueueFull) {
				t.Fatalf("post: %v", err)
			}
		}
		for s.posted < s.Capacity() {
			post()
		}
		for i := 0; i+1 < len(ops); i += 2 {
			ctr, n := uint16(ops[i])|uint16(ops[i+1]&0x80)<<8, uint32(ops[i+1]&0x7f)
			wasLive := uint32(ctr) < s.max && s.wqe[ctr].live && n <= s.wqe[ctr].len
			_, ok := s.completed(ctr, n)
			if ok != wasLive {
				t.Fatalf("completion of %d (%d bytes): accepted %t, live %t", ctr, n, ok, wasLive)
			}
			if ops[i]&1 == 0 {
				post()
			}
			live := uint32(0)
			for _, w := range s.wqe {
				if w.live {
					live++
				}
			}
			if live != s.posted {
				t.Fatalf("%d live WQEs, %d outstanding", live, s.posted)
			}
		}
	})
}
