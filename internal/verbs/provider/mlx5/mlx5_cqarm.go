package mlx5

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Arming an mlx5 CQ for its next completion event (-e), as rdma-core's
// providers/mlx5 does it (cq.c mlx5_arm_cq, mlx5_cq_event): in user
// space, with no system call. REQ_NOTIFY_CQ would reach the kernel's
// mlx5_ib_arm_cq, which knows only its own consumer index, not ours.
//
// The arm word is sn<<28 | cmd | ci: sn the CQ's arm sequence number
// (2 bits), cmd MLX5_CQ_DB_REQ_NOT (any completion) or _NOT_SOL
// (solicited and error completions only), ci the consumer index (24
// bits). It goes, big-endian, into word 1 of the CQ's doorbell record
// (MLX5_CQ_ARM_DB; word 0 is the consumer index Poll publishes), and
// then, with the CQN below it, as one 64-bit big-endian write to the CQ
// doorbell at MLX5_CQ_DOORBELL (0x20) in the CQ's UAR: the first static
// UAR page, which the kernel gives the CQ when CREATE_CQ's udata names
// no UAR page (create_cq_user: bfregi.sys_pages[0]; rdma-core:
// cq_uar_reg = uar[0].reg without a dynamic NC UAR). Between the two,
// mmio_wc_start (the record is visible before the doorbell), and after
// it mmio_flush_writes; mlx5WCFence is both (mlx5_mmio.go).
//
// The arm sequence number is how many events were taken for the CQ:
// rdma-core increments arm_sn in mlx5_cq_event, which ibv_get_cq_event
// calls once per event it reads; here the channel's Wait counts each
// event it reads into the CQ's slot (compchannel.go), and that count,
// mod 4, is the sn of the next arming.

const (
	mlx5CQDoorbell    = 0x20    // MLX5_CQ_DOORBELL: the CQ doorbell's offset in the UAR
	mlx5CQDBReqNotSol = 1 << 24 // MLX5_CQ_DB_REQ_NOT_SOL
	mlx5CQDBReqNot    = 0 << 24 // MLX5_CQ_DB_REQ_NOT
	// mlx5CQArmDB is the byte offset of the arm word in the doorbell
	// record (rdma-core mlx5.h: MLX5_CQ_ARM_DB = 1, a __be32 index).
	mlx5CQArmDB = 4
)

// mlx5ArmWord is the arm word for sequence number sn, consumer index ci
// (unmasked) and solicited-only or any completion (mlx5_arm_cq's
// sn << 28 | cmd | ci).
//
//go:nosplit
func mlx5ArmWord(sn, ci uint32, solicited bool) uint32 {
	cmd := uint32(mlx5CQDBReqNot)
	if solicited {
		cmd = mlx5CQDBReqNotSol
	}
	return (sn&3)<<28 | cmd | ci&0xffffff
}

// mlx5ArmDoorbell is the 64-bit value of the CQ doorbell: the arm word
// above the CQN (before the big-endian conversion of mmio_write64_be).
//
//go:nosplit
func mlx5ArmDoorbell(word, cqn uint32) uint64 { return uint64(word)<<32 | uint64(cqn) }

// Arm requests an event for the CQ's next completion (solicited: only
// for solicited or error completions) with arm sequence number sn. The
// caller polls the CQ again afterwards: a completion written before the
// device saw the doorbell may raise no event. Same goroutine as Poll (it
// reads the consumer index Poll keeps); no allocation, no pointer store.
//
//go:nosplit
func (cq *mlx5CQ) Arm(sn uint32, solicited bool) {
	w := mlx5ArmWord(sn, cq.ci, solicited)
	// Host order is little-endian on the architectures mlx5 runs on here
	// (amd64, arm64), as the rest of the provider assumes.
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&cq.dbr[mlx5CQArmDB])), bits.ReverseBytes32(w))
	mlx5WCFence()
	mlx5MMIOWrite64(cq.armReg, bits.ReverseBytes64(mlx5ArmDoorbell(w, cq.cqn)))
	mlx5WCFence()
}

// cqDoorbell is the CQ doorbell register of this context's CQs: offset
// MLX5_CQ_DOORBELL of the first static UAR page (see the top of this
// file).
func (c *mlx5Context) cqDoorbell() unsafe.Pointer {
	return unsafe.Pointer(&c.uars[0][mlx5CQDoorbell])
}
