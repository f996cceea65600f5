package perf

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// perf atomic: perftest's ib_atomic_bw and ib_atomic_lat. The runs are
// RDMA READ's (the same exchange sequence, outstanding operations limited
// by max_qp_rd_atom, the server's memory is the target and the server
// runs no loop), with perftest's work requests: 8 bytes, FETCH_AND_ADD of
// ATOMIC_ADD_VALUE (1) or CMP_AND_SWAP of compare 0 with swap
// ATOMIC_SWAP_VALUE (0) (perftest_resources.c ctx_set_send_reg_wqes).
//
// One difference: a perftest bandwidth client moves the remote address on
// by a cache line per post through its cycle buffer (increase_rem_addr);
// rdmactl's loops post the same WR each time, so every atomic of a QP
// hits the first word of its target area. The byte check below covers
// both: it adds up the target words at every cache line of the cycle.

// AtomicOp is perftest's -A.
type AtomicOp int

const (
	AtomicFetchAdd AtomicOp = iota // perftest's default
	AtomicCmpSwap
)

func (a AtomicOp) String() string {
	if a == AtomicCmpSwap {
		return "CMP_AND_SWAP"
	}
	return "FETCH_AND_ADD"
}

// ParseAtomicOp parses -A with perftest's names.
func ParseAtomicOp(s string) (AtomicOp, error) {
	switch s {
	case "FETCH_AND_ADD":
		return AtomicFetchAdd, nil
	case "CMP_AND_SWAP":
		return AtomicCmpSwap, nil
	}
	return 0, fmt.Errorf("invalid atomic type %q: want CMP_AND_SWAP or FETCH_AND_ADD (as perftest)", s)
}

// perftest's ATOMIC_ADD_VALUE and ATOMIC_SWAP_VALUE; CMP_AND_SWAP's
// compare is 0 (the WR is zeroed).
const (
	atomicAddValue  = 1
	atomicSwapValue = 0
)

// setAtomicWR makes wr perftest's atomic WR.
func (p *Params) setAtomicWR(wr *verbs.SendWR) {
	if p.Atomic == AtomicCmpSwap {
		wr.Opcode, wr.CompareAdd, wr.Swap = verbs.OpAtomicCmpSwap, 0, atomicSwapValue
		return
	}
	wr.Opcode, wr.CompareAdd = verbs.OpAtomicFetchAdd, atomicAddValue
}

// AtomicCheck is the byte check of an atomic run (JSON "atomic"): what
// the memory holds afterwards against what the operations imply.
//
// A posting side cannot know the start value of the peer's word (a
// perftest server fills its buffer with random bytes), so it reads the
// word before and after the run with a CMP_AND_SWAP of 0 with 0, which
// never changes memory and returns the word (atomicPeek).
type AtomicCheck struct {
	Op string `json:"op"`
	// Posting side (client, or both with -b), per QP: the peer's word
	// before and after the run, and the old value the last atomic
	// returned. FETCH_AND_ADD (in order, on one word): after = before +
	// iterations and fetched = after - 1; CMP_AND_SWAP of 0 with 0: all
	// three equal.
	Before  []uint64 `json:"before,omitempty"`
	After   []uint64 `json:"after,omitempty"`
	Fetched []uint64 `json:"fetched,omitempty"`
	// Target side (server, or both with -b), per QP: the sum of this
	// side's target words at every cache line of the cycle buffer, which
	// start at 0 (rdmactl's memory is zeroed). FETCH_AND_ADD: the
	// iterations the peer ran on the QP.
	Target         []uint64 `json:"target,omitempty"`
	ExpectedTarget *uint64  `json:"expected_target,omitempty"`
	OK             bool     `json:"ok"`
}

// atomicStride is perftest's INC(8, cache line): a bandwidth client's
// step through the cycle buffer.
const atomicStride = 64

// atomicPeek reads each QP's remote word with a CMP_AND_SWAP of 0 with 0
// (old value into a word of the QP's source area that the loops do not
// use), outside the measurement, one at a time. Iteration mode only.
func (s *Session) atomicPeek() ([]uint64, error) {
	out := make([]uint64, len(s.res.QPs))
	blk := blockSize(s.P, uint64(s.cycle))
	wcs := make([]verbs.WC, 1)
	for i := range s.res.QPs {
		off := uint64(i)*blk + atomicStride
		wr := []verbs.SendWR{{WRID: uint64(i), Opcode: verbs.OpAtomicCmpSwap, Flags: verbs.SendSignaled,
			SGE: verbs.SGE{Addr: s.res.Addr + off, Length: 8, LKey: s.res.lkey(i)}, RemoteAddr: s.rem[i].VAddr, RKey: s.rem[i].RKey}}
		if err := s.res.QPs[i].PostSend(wr); err != nil {
			return nil, fmt.Errorf("atomic check: reading QP %d's target word: %w", i, err)
		}
		deadline := time.Now().Add(s.Stall)
		for {
			n, err := s.res.SendCQ.Poll(wcs)
			if err != nil {
				return nil, fmt.Errorf("atomic check: %w", err)
			}
			if n == 1 {
				if wcs[0].Status != 0 {
					return nil, peerErrorf("atomic check: reading QP %d's target word failed: %s", i, wcStatusName(wcs[0].Status))
				}
				break
			}
			if time.Now().After(deadline) {
				return nil, peerErrorf("atomic check: no completion for %v reading QP %d's target word", s.Stall, i)
			}
			runtime.Gosched()
		}
		out[i] = binary.LittleEndian.Uint64(s.res.Buf[off:])
	}
	return out, nil
}

// peekAtomic records the peer's words before (after false) or after the
// run on a posting side, in iteration mode.
func (s *Session) peekAtomic(after bool) error {
	if s.P.Verb != VerbAtomic || s.P.Duration > 0 {
		return nil
	}
	v, err := s.atomicPeek()
	if err != nil {
		return err
	}
	if s.result.Atomic == nil {
		s.result.Atomic = &AtomicCheck{Op: s.P.Atomic.String()}
	}
	if after {
		s.result.Atomic.After = v
	} else {
		s.result.Atomic.Before = v
	}
	return nil
}

// atomicFetched reads each QP's source word, where the atomics return
// the old value.
func (r *runner) atomicFetched() []uint64 {
	v := make([]uint64, len(r.res.QPs))
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(r.res.Buf[r.srcOff(i):])
	}
	return v
}

// atomicTargets sums each QP's target words at every cache line of the
// cycle buffer (only the first word for latency, where perftest does not
// move the address).
func atomicTargets(p *Params, res *Resources, blk, cycle uint64) []uint64 {
	slots := cycle / atomicStride
	if p.Test == TestLat {
		slots = 1
	}
	v := make([]uint64, len(res.QPs))
	for i := range v {
		base := uint64(len(res.QPs)+i) * blk
		for k := uint64(0); k < slots; k++ {
			v[i] += binary.LittleEndian.Uint64(res.Buf[base+k*atomicStride:])
		}
	}
	return v
}

// checkAtomic completes s.result.Atomic from the memory after the run:
// the fetched values on a side that posted (with the words atomicPeek
// read), the target words on a side whose memory was the target. In
// iteration mode a value other than the operations imply is an error.
func (s *Session) checkAtomic(r *runner, posted, target bool) error {
	p := s.P
	c := s.result.Atomic
	if c == nil {
		c = &AtomicCheck{Op: p.Atomic.String()}
		s.result.Atomic = c
	}
	iter := p.Duration == 0 && !s.result.Interrupted
	if posted && r != nil {
		c.Fetched = r.atomicFetched()
	}
	var wantT uint64
	if p.Atomic == AtomicFetchAdd {
		wantT = p.Iters
	}
	if target {
		c.Target = atomicTargets(p, s.res, blockSize(p, uint64(s.cycle)), uint64(s.cycle))
		if iter {
			c.ExpectedTarget = &wantT
		}
	}
	var bad []string
	if iter && len(c.Before) == len(c.Fetched) && len(c.After) == len(c.Fetched) {
		for i, f := range c.Fetched {
			b, a := c.Before[i], c.After[i]
			switch {
			case p.Atomic == AtomicFetchAdd && (a-b != p.Iters || f != a-1):
				bad = append(bad, fmt.Sprintf("QP %d: the peer's word went from %d to %d and the last atomic returned %d; want +%d and %d", i, b, a, f, p.Iters, a-1))
			case p.Atomic == AtomicCmpSwap && (a != b || f != a):
				bad = append(bad, fmt.Sprintf("QP %d: the peer's word went from %d to %d and the last atomic returned %d; compare 0 and swap 0 change nothing", i, b, a, f))
			}
		}
	} else if iter && posted {
		bad = append(bad, "the peer's words were not read before and after the run")
	}
	for i, v := range c.Target {
		if c.ExpectedTarget != nil && v != wantT {
			bad = append(bad, fmt.Sprintf("QP %d's target words add up to %d, want %d", i, v, wantT))
		}
	}
	c.OK = len(bad) == 0
	if !c.OK {
		return peerErrorf("atomic check (%d x %s): %s", p.Iters, c.Op, strings.Join(bad, "; "))
	}
	return nil
}
