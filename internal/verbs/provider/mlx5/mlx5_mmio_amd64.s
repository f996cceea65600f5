#include "textflag.h"

// mlx5 doorbell primitives for amd64; see mlx5_mmio.go for why each exists.

// func mlx5MMIOWrite64(p unsafe.Pointer, v uint64)
// One 8-byte MOVQ to the UAR: never a locked read-modify-write (which
// atomic.Store would be) on device memory, never split by the compiler.
TEXT ·mlx5MMIOWrite64(SB), NOSPLIT, $0-16
	MOVQ	p+0(FP), AX
	MOVQ	v+8(FP), BX
	MOVQ	BX, (AX)
	RET

// func mlx5WCFence()
// SFENCE: earlier stores (the doorbell record) are globally visible before
// the write-combining UAR store, and the WC buffer holding the doorbell is
// drained afterwards (rdma-core mmio_wc_start / mmio_flush_writes on x86).
TEXT ·mlx5WCFence(SB), NOSPLIT, $0-0
	SFENCE
	RET

// func mlx5DMABarrier()
// x86 is TSO: WB stores are seen by the device in program order, so
// rdma-core's udma_to_device_barrier is only a compiler barrier; a call to
// an assembly function is one.
TEXT ·mlx5DMABarrier(SB), NOSPLIT, $0-0
	RET

// func mlx5DMAReadBarrier()
// udma_from_device_barrier on x86 is LFENCE in rdma-core.
TEXT ·mlx5DMAReadBarrier(SB), NOSPLIT, $0-0
	LFENCE
	RET
