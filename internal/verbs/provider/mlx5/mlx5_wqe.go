package mlx5

import (
	"encoding/binary"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// mlx5 send and receive WQEs as pure functions over the queue's bytes
// (as rdma-core's providers/mlx5/qp.c builds them; segment layouts from
// infiniband/mlx5dv.h).
// Everything the device reads is big-endian. mlx5_test.go checks these
// bytes against a C program that builds the same WQEs with mlx5dv.h's own
// helpers (testdata/mlx5/golden.c).

const (
	mlx5WQEBB      = 64 // MLX5_SEND_WQE_BB
	mlx5WQEBBShift = 6
	mlx5SegSize    = 16 // ctrl, raddr and data segments; ds counts these units

	mlx5OpRDMAWrite    = 0x08 // MLX5_OPCODE_RDMA_WRITE
	mlx5OpRDMAWriteImm = 0x09
	mlx5OpSend         = 0x0a
	mlx5OpSendImm      = 0x0b
	mlx5OpRDMARead     = 0x10

	mlx5CtrlCQUpdate  = 0x08 // MLX5_WQE_CTRL_CQ_UPDATE: generate a CQE
	mlx5CtrlSolicited = 0x02 // MLX5_WQE_CTRL_SOLICITED
	mlx5CtrlFence     = 0x80 // MLX5_WQE_CTRL_FENCE

	mlx5InlineSeg = 0x80000000 // MLX5_INLINE_SEG, or'ed into byte_count

	// MLX5_INVALID_LKEY terminates a receive WQE with fewer SGEs than slots.
	mlx5InvalidLKey = 0x100
)

// mlx5Opcode maps a verbs opcode to the WQE opcode (rdma-core qp.c
// mlx5_ib_opcode[]); ok is false for opcodes this data path does not post.
func mlx5Opcode(op verbs.Opcode) (uint8, bool) {
	switch op {
	case verbs.OpRDMAWrite:
		return mlx5OpRDMAWrite, true
	case verbs.OpRDMAWriteImm:
		return mlx5OpRDMAWriteImm, true
	case verbs.OpSend:
		return mlx5OpSend, true
	case verbs.OpSendImm:
		return mlx5OpSendImm, true
	case verbs.OpRDMARead:
		return mlx5OpRDMARead, true
	case verbs.OpAtomicCmpSwap:
		return mlx5OpAtomicCS, true
	case verbs.OpAtomicFetchAdd:
		return mlx5OpAtomicFA, true
	}
	return 0, false
}

// mlx5FmCeSe is the ctrl segment's fm_ce_se byte for wr's flags; sigAll is
// the QP's sq_sig_all (rdma-core folds it into every WQE the same way).
func mlx5FmCeSe(f verbs.SendFlags, sigAll bool) uint8 {
	var b uint8
	if f&verbs.SendSignaled != 0 || sigAll {
		b |= mlx5CtrlCQUpdate
	}
	if f&verbs.SendSolicited != 0 {
		b |= mlx5CtrlSolicited
	}
	if f&verbs.SendFence != 0 {
		b |= mlx5CtrlFence
	}
	return b
}

// mlx5SendDS is the size of wr's WQE in 16-byte units (the ctrl segment's
// ds): ctrl, then raddr for RDMA operations (raddr and the atomic
// segment for atomics), then one data segment or the
// inline data (4-byte header plus payload, rounded up to 16). A
// zero-length SGE is skipped, as rdma-core does. The WQE takes
// ceil(ds·16/64) WQEBBs.
func mlx5SendDS(wr *verbs.SendWR) uint32 {
	ds := uint32(1)
	switch wr.Opcode {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteImm, verbs.OpRDMARead:
		ds++
	case verbs.OpAtomicCmpSwap, verbs.OpAtomicFetchAdd:
		ds += 2 // raddr, atomic
	}
	n := wr.SGE.Length
	switch {
	case n == 0:
	case wr.Flags&verbs.SendInline != 0 && wr.Opcode != verbs.OpRDMARead:
		ds += (4 + n + 15) / 16
	default:
		ds++
	}
	return ds
}

// mlx5WriteSendWQE writes wr into the send queue sq (wqeCnt·64 bytes, a
// power of two WQEBBs) at producer counter curPost and returns the number
// of WQEBBs used. A WQE longer than one WQEBB continues at the start of
// the queue when it reaches the end (rdma-core's qend handling). The
// caller has validated wr (opcode, inline length) and made room. Inline
// payload is read from wr.SGE.Addr (this process's MR memory).
func mlx5WriteSendWQE(sq []byte, curPost, qpn uint32, wr *verbs.SendWR, fmCeSe uint8) uint32 {
	mask := uint32(len(sq) - 1)
	base := (curPost << mlx5WQEBBShift) & mask
	seg := func(i uint32) []byte {
		o := (base + i*mlx5SegSize) & mask
		return sq[o : o+mlx5SegSize]
	}
	be := binary.BigEndian
	op, _ := mlx5Opcode(wr.Opcode)
	ds := uint32(1)
	switch wr.Opcode {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteImm, verbs.OpRDMARead:
		r := seg(ds)
		be.PutUint64(r[0:], wr.RemoteAddr)
		be.PutUint32(r[8:], wr.RKey)
		be.PutUint32(r[12:], 0)
		ds++
	case verbs.OpAtomicCmpSwap, verbs.OpAtomicFetchAdd:
		r := seg(ds)
		be.PutUint64(r[0:], wr.RemoteAddr)
		be.PutUint32(r[8:], wr.RKey)
		be.PutUint32(r[12:], 0)
		putMLX5AtomicSeg(seg(ds+1), wr)
		ds += 2
	}
	n := wr.SGE.Length
	switch {
	case n == 0:
	case wr.Flags&verbs.SendInline != 0 && wr.Opcode != verbs.OpRDMARead:
		h := seg(ds)
		be.PutUint32(h[0:], n|mlx5InlineSeg)
		// The payload follows the 4-byte header and may wrap.
		src := rawmem.At(wr.SGE.Addr, int(n))
		o := (base + ds*mlx5SegSize + 4) & mask
		for len(src) > 0 {
			c := copy(sq[o:], src)
			src = src[c:]
			o = 0
		}
		ds += (4 + n + 15) / 16
	default:
		d := seg(ds)
		be.PutUint32(d[0:], n)
		be.PutUint32(d[4:], wr.SGE.LKey)
		be.PutUint64(d[8:], wr.SGE.Addr)
		ds++
	}
	c := seg(0)
	be.PutUint32(c[0:], (curPost&0xffff)<<8|uint32(op))
	be.PutUint32(c[4:], qpn<<8|ds)
	// signature, dci_stream_channel_id, fm_ce_se
	be.PutUint32(c[8:], uint32(fmCeSe))
	var imm uint32
	if wr.Opcode == verbs.OpSendImm || wr.Opcode == verbs.OpRDMAWriteImm {
		imm = wr.Imm // host order in SendWR; big-endian on the wire, like htonl()
	}
	be.PutUint32(c[12:], imm)
	return (ds*mlx5SegSize + mlx5WQEBB - 1) / mlx5WQEBB
}

// mlx5WriteRecvWQE writes one receive WQE of stride bytes (a power of two,
// ≥ 16): the data segment, then an invalid-lkey terminator if the stride
// has room for more segments (rdma-core mlx5_post_recv).
func mlx5WriteRecvWQE(slot []byte, wr *verbs.RecvWR) {
	be := binary.BigEndian
	be.PutUint32(slot[0:], wr.SGE.Length)
	be.PutUint32(slot[4:], wr.SGE.LKey)
	be.PutUint64(slot[8:], wr.SGE.Addr)
	if len(slot) >= 2*mlx5SegSize {
		be.PutUint32(slot[16:], 0)
		be.PutUint32(slot[20:], mlx5InvalidLKey)
		be.PutUint64(slot[24:], 0)
	}
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
func putMLX5AtomicSeg(seg []byte, wr *verbs.SendWR) {
	be := binary.BigEndian
	if wr.Opcode == verbs.OpAtomicCmpSwap {
		be.PutUint64(seg[0:], wr.Swap)
		be.PutUint64(seg[8:], wr.CompareAdd)
		return
	}
	be.PutUint64(seg[0:], wr.CompareAdd)
	be.PutUint64(seg[8:], 0)
}
