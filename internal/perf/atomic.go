package perf

import (
	"encoding/binary"
	"fmt"
	"strings"

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
// the memory holds afterwards against what the operations imply, from a
// target that started at 0 (perftest and rdmactl zero their buffers).
type AtomicCheck struct {
	Op string `json:"op"`
	// Fetched (client, or -b): per QP, the old value the last atomic
	// returned. FETCH_AND_ADD in order on one word: iterations-1.
	Fetched []uint64 `json:"fetched,omitempty"`
	// Target (server, or -b): per QP, the sum of the target words at
	// every cache line of the cycle buffer. FETCH_AND_ADD: the
	// iterations the peer ran on the QP.
	Target []uint64 `json:"target,omitempty"`
	// Expected is what every Fetched and every Target entry must be
	// (one value each; absent in duration mode, where no count is known
	// in advance).
	ExpectedFetched *uint64 `json:"expected_fetched,omitempty"`
	ExpectedTarget  *uint64 `json:"expected_target,omitempty"`
	OK              bool    `json:"ok"`
}

// atomicStride is perftest's INC(8, cache line): a bandwidth client's
// step through the cycle buffer.
const atomicStride = 64

// fetched reads each QP's source word, where the atomics return the old
// value.
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

// checkAtomic fills s.result.Atomic from the memory after the run: fetched
// on a side that posted, target on a side whose memory was the target.
// In iteration mode a value other than the operations imply is an error.
func (s *Session) checkAtomic(r *runner, posted, target bool) error {
	p := s.P
	c := &AtomicCheck{Op: p.Atomic.String(), OK: true}
	var wantF, wantT uint64
	if p.Atomic == AtomicFetchAdd {
		wantF, wantT = p.Iters-1, p.Iters
	}
	iter := p.Duration == 0 && !s.result.Interrupted
	if posted && r != nil {
		c.Fetched = r.atomicFetched()
		if iter {
			c.ExpectedFetched = &wantF
		}
	}
	if target {
		c.Target = atomicTargets(p, s.res, blockSize(p, uint64(s.cycle)), uint64(s.cycle))
		if iter {
			c.ExpectedTarget = &wantT
		}
	}
	var bad []string
	for i, v := range c.Fetched {
		if c.ExpectedFetched != nil && v != wantF {
			bad = append(bad, fmt.Sprintf("QP %d's last atomic returned %d, want %d", i, v, wantF))
		}
	}
	for i, v := range c.Target {
		if c.ExpectedTarget != nil && v != wantT {
			bad = append(bad, fmt.Sprintf("QP %d's target words add up to %d, want %d", i, v, wantT))
		}
	}
	c.OK = len(bad) == 0
	s.result.Atomic = c
	if !c.OK {
		return peerErrorf("atomic check: %s (%d x %s from 0)", strings.Join(bad, "; "), p.Iters, c.Op)
	}
	return nil
}
