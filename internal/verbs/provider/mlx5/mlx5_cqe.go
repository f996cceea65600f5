package mlx5

import (
	"encoding/binary"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// mlx5 64-byte CQEs (struct mlx5_cqe64 and mlx5_err_cqe, infiniband/mlx5dv.h),
// decoded as rdma-core's providers/mlx5/cq.c does.

const (
	mlx5CQESize = 64

	// CQE field offsets (struct mlx5_cqe64).
	mlx5CQESLID       = 22 // be16
	mlx5CQEFlagsRQPN  = 24 // be32: sl, grh flags, source QPN (UD)
	mlx5CQEImmInval   = 36 // be32 imm_inval_pkey
	mlx5CQEByteCnt    = 44 // be32
	mlx5CQESopDropQPN = 56 // be32: send opcode << 24 | QPN
	mlx5CQEWQECounter = 60 // be16
	mlx5CQEOpOwn      = 63 // opcode << 4 | ... | owner
	mlx5ErrVendorSynd = 54 // struct mlx5_err_cqe
	mlx5ErrSyndrome   = 55

	// CQE opcodes (op_own >> 4).
	mlx5CQEReq         = 0
	mlx5CQERespWRImm   = 1
	mlx5CQERespSend    = 2
	mlx5CQERespSendImm = 3
	mlx5CQERespSendInv = 4
	mlx5CQEReqErr      = 13
	mlx5CQERespErr     = 14
	mlx5CQEInvalid     = 15

	// A fresh CQ buffer has op_own = MLX5_CQE_INVALID << 4 in every CQE.
	mlx5CQEInitOpOwn = mlx5CQEInvalid << 4
)

// ibv_wc_status values (infiniband/verbs.h enum ibv_wc_status; checked by
// the golden test) the mlx5 decoder produces.
const (
	mlx5WCSuccess       verbs.WCStatus = 0
	mlx5WCLocLenErr     verbs.WCStatus = 1
	mlx5WCLocQPOpErr    verbs.WCStatus = 2
	mlx5WCLocProtErr    verbs.WCStatus = 4
	mlx5WCWRFlushErr    verbs.WCStatus = 5
	mlx5WCMWBindErr     verbs.WCStatus = 6
	mlx5WCBadRespErr    verbs.WCStatus = 7
	mlx5WCLocAccessErr  verbs.WCStatus = 8
	mlx5WCRemInvReqErr  verbs.WCStatus = 9
	mlx5WCRemAccessErr  verbs.WCStatus = 10
	mlx5WCRemOpErr      verbs.WCStatus = 11
	mlx5WCRetryExcErr   verbs.WCStatus = 12
	mlx5WCRNRRetryExc   verbs.WCStatus = 13
	mlx5WCRemAbortErr   verbs.WCStatus = 16
	mlx5WCGeneralErr    verbs.WCStatus = 21
	mlx5SyndromeWRFlush                = 0x05
)

// mlx5Syndromes maps an error CQE's syndrome to the work completion status
// and a readable name (rdma-core cq.c mlx5_handle_error_cqe; the names are
// mlx5dv.h's MLX5_CQE_SYNDROME_* without the prefix).
var mlx5Syndromes = [256]struct {
	status verbs.WCStatus
	name   string
}{
	0x01: {mlx5WCLocLenErr, "local length error"},
	0x02: {mlx5WCLocQPOpErr, "local QP operation error"},
	0x04: {mlx5WCLocProtErr, "local protection error"},
	0x05: {mlx5WCWRFlushErr, "work request flushed"},
	0x06: {mlx5WCMWBindErr, "memory window bind error"},
	0x10: {mlx5WCBadRespErr, "bad response"},
	0x11: {mlx5WCLocAccessErr, "local access error"},
	0x12: {mlx5WCRemInvReqErr, "remote invalid request"},
	0x13: {mlx5WCRemAccessErr, "remote access error"},
	0x14: {mlx5WCRemOpErr, "remote operation error"},
	0x15: {mlx5WCRetryExcErr, "transport retry counter exceeded"},
	0x16: {mlx5WCRNRRetryExc, "RNR retry counter exceeded"},
	0x22: {mlx5WCRemAbortErr, "remote aborted"},
}

// MLX5Syndrome describes an mlx5 error CQE's syndrome (WC.VendorErr of an
// mlx5 completion holds syndrome<<8 | vendor_err_synd), e.g.
// "remote access error (syndrome 0x13, vendor 0x88)". Not for the hot path.
func MLX5Syndrome(vendorErr uint32) string {
	s := uint8(vendorErr >> 8)
	name := mlx5Syndromes[s].name
	if name == "" {
		name = "unknown syndrome"
	}
	return name + " (syndrome 0x" + strconv.FormatUint(uint64(s), 16) +
		", vendor 0x" + strconv.FormatUint(uint64(vendorErr&0xff), 16) + ")"
}

// mlx5SyndromeStatus is the WC status for syndrome s (GENERAL_ERR for
// syndromes rdma-core does not name).
func mlx5SyndromeStatus(s uint8) verbs.WCStatus {
	if mlx5Syndromes[s].name == "" {
		return mlx5WCGeneralErr
	}
	return mlx5Syndromes[s].status
}

// mlx5CQEOwned reports whether the CQE whose last 4 bytes (60..63, loaded
// little-endian, so op_own is the top byte) are tail belongs to software at
// unmasked consumer index ci of a ring of ncqe entries: not the initial
// INVALID opcode, and the owner bit matching the pass parity (rdma-core
// get_sw_cqe).
func mlx5CQEOwned(tail, ci, ncqe uint32) bool {
	opOwn := tail >> 24
	return opOwn>>4 != mlx5CQEInvalid && opOwn&1 == boolBit(ci&ncqe != 0)
}

func boolBit(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// mlx5DecodeCQE fills wc from cqe, except WRID (which comes from the
// queue's bookkeeping). It returns the CQE opcode.
func mlx5DecodeCQE(cqe []byte, wc *verbs.WC) uint8 {
	_ = cqe[mlx5CQESize-1]
	be := binary.BigEndian
	op := cqe[mlx5CQEOpOwn] >> 4
	*wc = verbs.WC{}
	wc.QPNum = be.Uint32(cqe[mlx5CQESopDropQPN:]) & 0xffffff
	switch op {
	case mlx5CQEReq:
		switch cqe[mlx5CQESopDropQPN] { // the completed WQE's opcode
		case mlx5OpRDMAWrite, mlx5OpRDMAWriteImm:
			wc.Opcode = verbs.WCRDMAWrite
		case mlx5OpRDMARead:
			wc.Opcode = verbs.WCRDMARead
			wc.ByteLen = be.Uint32(cqe[mlx5CQEByteCnt:])
		case mlx5OpAtomicCS, mlx5OpAtomicFA:
			// As rdma-core's handle_good_req: the old value's 8 bytes.
			wc.Opcode = verbs.WCFetchAdd
			if cqe[mlx5CQESopDropQPN] == mlx5OpAtomicCS {
				wc.Opcode = verbs.WCCompSwap
			}
			wc.ByteLen = verbs.AtomicSize
		default:
			wc.Opcode = verbs.WCSend
		}
	case mlx5CQERespWRImm, mlx5CQERespSend, mlx5CQERespSendImm, mlx5CQERespSendInv:
		wc.Opcode = verbs.WCRecv
		if op == mlx5CQERespWRImm {
			wc.Opcode = verbs.WCRecvRDMAWithImm
		}
		if op == mlx5CQERespWRImm || op == mlx5CQERespSendImm {
			wc.Flags |= verbs.WCWithImm
			wc.Imm = be.Uint32(cqe[mlx5CQEImmInval:])
		}
		wc.ByteLen = be.Uint32(cqe[mlx5CQEByteCnt:])
		fr := be.Uint32(cqe[mlx5CQEFlagsRQPN:])
		wc.SrcQP = fr & 0xffffff
		wc.SL = uint8(fr>>24) & 0xf
		if (fr>>28)&3 != 0 {
			wc.Flags |= verbs.WCWithGRH
		}
		wc.SLID = be.Uint16(cqe[mlx5CQESLID:])
	case mlx5CQEReqErr, mlx5CQERespErr:
		s := cqe[mlx5ErrSyndrome]
		wc.Status = mlx5SyndromeStatus(s)
		wc.VendorErr = uint32(s)<<8 | uint32(cqe[mlx5ErrVendorSynd])
		wc.Opcode = verbs.WCSend
		if op == mlx5CQERespErr {
			wc.Opcode = verbs.WCRecv
		}
	default:
		// Resize, signature and no-packet CQEs never occur on the CQs
		// this provider creates; report rather than guess.
		wc.Status = mlx5WCGeneralErr
		wc.VendorErr = uint32(op)
	}
	return op
}
