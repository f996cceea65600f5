package rxe

import (
	"encoding/binary"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// rxe work queue entries and completion entries, as pure functions over the
// bytes of one ring slot. Layouts: struct rxe_send_wqe, rxe_recv_wqe
// (rdma_user_rxe.h) and ib_uverbs_wc (ib_user_verbs.h); all host-endian
// (little-endian on every platform this tool targets) except the immediate
// data, which is big-endian on both sides.

// struct rxe_send_wqe offsets. The first 144 bytes are struct rxe_send_wr.
const (
	rxeSWQEWRID       = 0
	rxeSWQEOpcode     = 12
	rxeSWQESendFlags  = 16
	rxeSWQEImm        = 20 // __be32 ex.imm_data
	rxeSWQERemoteAddr = 24 // wr.rdma.remote_addr
	rxeSWQERKey       = 32 // wr.rdma.rkey
	rxeSWQEUDQPN      = 24 // wr.ud.remote_qpn
	rxeSWQEUDQKey     = 28 // wr.ud.remote_qkey
	rxeSWQEUDPKey     = 32 // wr.ud.pkey_index (u16)
	rxeSWQEUDAHNum    = 36 // wr.ud.ah_num: the kernel looks the AH up by it
	rxeSWQEWRSize     = 144
	rxeSWQEStatus     = 144
	rxeSWQEState      = 148 // 0 = posted; the kernel advances it
	rxeSWQEIOVA       = 152
	rxeSWQESSN        = 176
	rxeSWQEDMALength  = 184
	rxeSWQEDMAResid   = 188
	rxeSWQEDMANumSGE  = 196
	rxeSWQEHdrSize    = 208 // dma.sge[] or dma.inline_data[] follow

	rxeRWQEWRID      = 0
	rxeRWQEDMALength = 16
	rxeRWQEDMAResid  = 20
	rxeRWQEDMANumSGE = 28
	rxeRWQEHdrSize   = 40 // dma.sge[] follow

	rxeSGESize = 16 // struct rxe_sge: u64 addr, u32 length, u32 lkey

	// The CQE is struct ib_uverbs_wc at the start of each CQ slot.
	rxeCQESize = 48
)

// encodeRxeSendWQE writes wr into slot (one SQ slot). ahNum is the rxe AH
// number for UD (0 otherwise) and ssn the QP's running send sequence number,
// stored as rdma-core does. The caller has validated wr (opcode for the QP
// type, inline length against the granted maximum, slot size). For inline
// WRs the payload is read from wr.SGE.Addr, which must be mapped memory of
// this process (registered MR memory, not the Go heap).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func encodeRxeSendWQE(slot []byte, wr *verbs.SendWR, ahNum, ssn uint32) {
	_ = slot[rxeSWQEHdrSize-1]
	// The kernel wrote status, state, PSNs and DMA progress into this slot
	// the last time it was used; start from zero as rdma-core does.
	clear(slot[:rxeSWQEHdrSize])
	le := binary.LittleEndian
	le.PutUint64(slot[rxeSWQEWRID:], wr.WRID)
	le.PutUint32(slot[rxeSWQEOpcode:], uint32(wr.Opcode))
	le.PutUint32(slot[rxeSWQESendFlags:], uint32(wr.Flags))
	if wr.Opcode == verbs.OpSendImm || wr.Opcode == verbs.OpRDMAWriteImm {
		binary.BigEndian.PutUint32(slot[rxeSWQEImm:], wr.Imm)
	}
	switch wr.Opcode {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteImm, verbs.OpRDMARead:
		le.PutUint64(slot[rxeSWQERemoteAddr:], wr.RemoteAddr)
		le.PutUint32(slot[rxeSWQERKey:], wr.RKey)
		le.PutUint64(slot[rxeSWQEIOVA:], wr.RemoteAddr)
	case verbs.OpAtomicCmpSwap, verbs.OpAtomicFetchAdd:
		putRxeAtomic(slot, wr)
	}
	if ahNum != 0 {
		le.PutUint32(slot[rxeSWQEUDQPN:], wr.RemoteQPN)
		le.PutUint32(slot[rxeSWQEUDQKey:], wr.RemoteQKey)
		le.PutUint32(slot[rxeSWQEUDAHNum:], ahNum)
	}
	le.PutUint32(slot[rxeSWQESSN:], ssn)
	n := wr.SGE.Length
	le.PutUint32(slot[rxeSWQEDMALength:], n)
	le.PutUint32(slot[rxeSWQEDMAResid:], n)
	var nsge uint32
	if n > 0 {
		nsge = 1
	}
	le.PutUint32(slot[rxeSWQEDMANumSGE:], nsge)
	if wr.Flags&verbs.SendInline != 0 {
		if n > 0 {
			copy(slot[rxeSWQEHdrSize:rxeSWQEHdrSize+int(n)], rawmem.At(wr.SGE.Addr, int(n)))
		}
		return
	}
	putRxeSGE(slot[rxeSWQEHdrSize:], &wr.SGE)
}

// encodeRxeRecvWQE writes wr into slot (one RQ slot).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func encodeRxeRecvWQE(slot []byte, wr *verbs.RecvWR) {
	_ = slot[rxeRWQEHdrSize+rxeSGESize-1]
	clear(slot[:rxeRWQEHdrSize])
	le := binary.LittleEndian
	le.PutUint64(slot[rxeRWQEWRID:], wr.WRID)
	le.PutUint32(slot[rxeRWQEDMALength:], wr.SGE.Length)
	le.PutUint32(slot[rxeRWQEDMAResid:], wr.SGE.Length)
	le.PutUint32(slot[rxeRWQEDMANumSGE:], 1)
	putRxeSGE(slot[rxeRWQEHdrSize:], &wr.SGE)
}

//go:nosplit
func putRxeSGE(b []byte, s *verbs.SGE) {
	_ = b[rxeSGESize-1]
	binary.LittleEndian.PutUint64(b[0:], s.Addr)
	binary.LittleEndian.PutUint32(b[8:], s.Length)
	binary.LittleEndian.PutUint32(b[12:], s.LKey)
}

// decodeRxeCQE reads one struct ib_uverbs_wc from the start of a CQ slot.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func decodeRxeCQE(b []byte, wc *verbs.WC) {
	_ = b[rxeCQESize-1]
	le := binary.LittleEndian
	wc.WRID = le.Uint64(b[0:])
	wc.Status = verbs.WCStatus(le.Uint32(b[8:]))
	wc.Opcode = verbs.WCOpcode(le.Uint32(b[12:]))
	wc.VendorErr = le.Uint32(b[16:])
	wc.ByteLen = le.Uint32(b[20:])
	wc.Imm = binary.BigEndian.Uint32(b[24:])
	wc.QPNum = le.Uint32(b[28:])
	wc.SrcQP = le.Uint32(b[32:])
	wc.Flags = le.Uint32(b[36:])
	wc.PKeyIndex = le.Uint16(b[40:])
	wc.SLID = le.Uint16(b[42:])
	wc.SL = b[44]
	wc.DLIDBits = b[45]
	wc.PortNum = b[46]
}

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
func putRxeAtomic(slot []byte, wr *verbs.SendWR) {
	_ = slot[rxeSWQEIOVA+7]
	le := binary.LittleEndian
	le.PutUint64(slot[rxeSWQEAtomicAddr:], wr.RemoteAddr)
	le.PutUint64(slot[rxeSWQEAtomicCompare:], wr.CompareAdd)
	le.PutUint64(slot[rxeSWQEAtomicSwap:], wr.Swap)
	le.PutUint32(slot[rxeSWQEAtomicRKey:], wr.RKey)
	le.PutUint64(slot[rxeSWQEIOVA:], wr.RemoteAddr)
}
