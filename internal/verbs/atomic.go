package verbs

import (
	"errors"
)

// The atomic work requests (OpAtomicCmpSwap, OpAtomicFetchAdd): the
// responder reads the 8-byte word at RemoteAddr (8-byte aligned, in an MR
// registered with AccessRemoteAtomic, on a QP whose access flags allow
// it), adds CompareAdd, or stores Swap if it equals CompareAdd, and
// returns the old value into the requester's SGE (8 bytes). RC only.
// The providers write them into their WQEs (provider/rxe/rxe_wqe.go, provider/mlx5/mlx5_wqe.go).

// AtomicSize is the length of an atomic's operand and of its SGE.
const AtomicSize = 8

// CheckAtomic refuses an atomic WR that no device accepts: not on RC,
// inline, an SGE of other than 8 bytes or a misaligned remote address
// (the responder would fail it with a remote error). Preallocated errors.
//
//go:nosplit
func CheckAtomic(wr *SendWR, rc bool) error {
	switch {
	case !rc:
		return ErrAtomicNotRC
	case wr.Flags&SendInline != 0:
		return ErrInlineAtomic
	case wr.SGE.Length != AtomicSize:
		return ErrAtomicLength
	case wr.RemoteAddr%AtomicSize != 0:
		return ErrAtomicAlign
	}
	return nil
}

var (
	ErrAtomicNotRC  = errors.New("verbs: atomic operations need an RC QP")
	ErrInlineAtomic = errors.New("verbs: atomic operations cannot be inline")
	ErrAtomicLength = errors.New("verbs: an atomic operation's SGE must be 8 bytes (the old value lands there)")
	ErrAtomicAlign  = errors.New("verbs: an atomic operation's remote address must be 8-byte aligned")
)
