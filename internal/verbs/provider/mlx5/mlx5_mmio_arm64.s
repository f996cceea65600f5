#include "textflag.h"

// mlx5 doorbell primitives for arm64; see mlx5_mmio.go.

// func mlx5MMIOWrite64(p unsafe.Pointer, v uint64)
TEXT ·mlx5MMIOWrite64(SB), NOSPLIT, $0-16
	MOVD	p+0(FP), R0
	MOVD	v+8(FP), R1
	MOVD	R1, (R0)
	RET

// func mlx5WCFence()
// DSB ST: rdma-core's mmio_wc_start and mmio_flush_writes on arm64.
TEXT ·mlx5WCFence(SB), NOSPLIT, $0-0
	DSB	$0xe
	RET

// func mlx5DMABarrier()
// DMB OSHST: rdma-core's udma_to_device_barrier on arm64 (stores to
// coherent DMA memory ordered for the outer-shareable domain the device
// is in; Go's STLR only promises inner-shareable ordering).
TEXT ·mlx5DMABarrier(SB), NOSPLIT, $0-0
	DMB	$0x2
	RET

// func mlx5DMAReadBarrier()
// DMB OSHLD: rdma-core's udma_from_device_barrier on arm64.
TEXT ·mlx5DMAReadBarrier(SB), NOSPLIT, $0-0
	DMB	$0x1
	RET
