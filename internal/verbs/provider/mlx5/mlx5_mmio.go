//go:build amd64 || arm64

package mlx5

import "unsafe"

// Doorbell and DMA ordering for the mlx5 data path (rdma-core
// providers/mlx5/qp.c post_send_db, util/udma_barrier.h), as small
// assembly functions (mlx5_mmio_{amd64,arm64}.s; still no cgo).
//
// What sync/atomic gives: Go's atomics are sequentially consistent. On
// amd64 atomic.StoreUint32 is XCHG, a full barrier for ordinary
// (write-back) memory; on arm64 it is STLR, a release store: earlier loads
// and stores are ordered before it for observers in the inner-shareable
// domain (the CPUs). Neither says anything about write-combining device
// memory (the UAR), and on arm64 a DMA-capable device sits in the
// outer-shareable domain. Hence, per doorbell:
//
//  1. WQE stores (plain stores into the mmap'd SQ).
//  2. mlx5DMABarrier: rdma-core's udma_to_device_barrier (nothing but a
//     compiler barrier on x86-TSO, DMB OSHST on arm64).
//  3. atomic.StoreUint32 of the doorbell record (big-endian SQ counter).
//  4. mlx5WCFence: the DBR store is globally visible before the UAR store,
//     which is write-combining (SFENCE on amd64, DSB ST on arm64;
//     rdma-core mmio_wc_start).
//  5. mlx5MMIOWrite64: one 8-byte store of the WQE's first ctrl bytes to
//     the UAR (not atomic.Store: on amd64 that is a locked
//     read-modify-write on device memory).
//  6. mlx5WCFence again: drain the WC buffer so the doorbell leaves now
//     (rdma-core mmio_flush_writes).
//
// Polling: atomic.LoadUint32 of the CQE's last word (owner bit), then
// mlx5DMAReadBarrier (LFENCE / DMB OSHLD, rdma-core
// udma_from_device_barrier) before the other CQE fields are read.

func mlx5MMIOWrite64(p unsafe.Pointer, v uint64)
func mlx5WCFence()
func mlx5DMABarrier()
func mlx5DMAReadBarrier()
