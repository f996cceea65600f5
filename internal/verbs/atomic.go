package verbs

import (
	"encoding/binary"
	"errors"
)

// The atomic work requests (OpAtomicCmpSwap, OpAtomicFetchAdd): the
// responder reads the 8-byte word at RemoteAddr (8-byte aligned, in an MR
// registered with AccessRemoteAtomic, on a QP whose access flags allow
// it), adds CompareAdd, or stores Swap if it equals CompareAdd, and
// returns the old value into the requester's SGE (8 bytes). RC only.
// Both sides' rxe and mlx5 WQE layouts are here; the providers' post and
// poll paths call them.

// AtomicSize is the length of an atomic's operand and of its SGE.
const AtomicSize = 8

// checkAtomic refuses an atomic WR that no device accepts: not on RC,
// inline, an SGE of other than 8 bytes or a misaligned remote address
// (the responder would fail it with a remote error). Preallocated errors.
//
//go:nosplit
func checkAtomic(wr *SendWR, rc bool) error {
	switch {
	case !rc:
		return errAtomicNotRC
	case wr.Flags&SendInline != 0:
		return errInlineAtomic
	case wr.SGE.Length != AtomicSize:
		return errAtomicLength
	case wr.RemoteAddr%AtomicSize != 0:
		return errAtomicAlign
	}
	return nil
}

var (
	errAtomicNotRC  = errors.New("verbs: atomic operations need an RC QP")
	errInlineAtomic = errors.New("verbs: atomic operations cannot be inline")
	errAtomicLength = errors.New("verbs: an atomic operation's SGE must be 8 bytes (the old value lands there)")
	errAtomicAlign  = errors.New("verbs: an atomic operation's remote address must be 8-byte aligned")
)

// struct rxe_send_wr's wr.atomic (rdma_user_rxe.h): remote_addr at 24
// (as wr.rdma's), compare_add at 32, swap at 40, rkey at 48.
const (
	rxeSWQEAtomicAddr    = 24
	rxeSWQEAtomicCompare = 32
	rxeSWQEAtomicSwap    = 40
	rxeSWQEAtomicRKey    = 48
)

// putRxeAtomic writes wr's atomic fields into an rxe send WQE slot, and
// the iova the kernel's requester reads the target address from (as
// rdma-core's init_send_wqe).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func putRxeAtomic(slot []byte, wr *SendWR) {
	_ = slot[rxeSWQEIOVA+7]
	le := binary.LittleEndian
	le.PutUint64(slot[rxeSWQEAtomicAddr:], wr.RemoteAddr)
	le.PutUint64(slot[rxeSWQEAtomicCompare:], wr.CompareAdd)
	le.PutUint64(slot[rxeSWQEAtomicSwap:], wr.Swap)
	le.PutUint32(slot[rxeSWQEAtomicRKey:], wr.RKey)
	le.PutUint64(slot[rxeSWQEIOVA:], wr.RemoteAddr)
}

// mlx5 (mlx5dv.h): the WQE opcodes, and struct mlx5_wqe_atomic_seg
// (__be64 swap_add, __be64 compare), which follows the raddr segment.
const (
	mlx5OpAtomicCS = 0x11 // MLX5_OPCODE_ATOMIC_CS
	mlx5OpAtomicFA = 0x12 // MLX5_OPCODE_ATOMIC_FA
)

// putMLX5AtomicSeg writes the atomic segment of wr into seg (16 bytes), as
// rdma-core's set_atomic_seg: CMP_AND_SWAP carries swap and compare,
// FETCH_AND_ADD the addend in swap_add.
func putMLX5AtomicSeg(seg []byte, wr *SendWR) {
	be := binary.BigEndian
	if wr.Opcode == OpAtomicCmpSwap {
		be.PutUint64(seg[0:], wr.Swap)
		be.PutUint64(seg[8:], wr.CompareAdd)
		return
	}
	be.PutUint64(seg[0:], wr.CompareAdd)
	be.PutUint64(seg[8:], 0)
}
