//go:build !amd64 && !arm64

package mlx5

import (
	"sync/atomic"
	"unsafe"
)

// Portable fallbacks for architectures without an assembly version
// (untested there; mlx5 hosts are amd64 or arm64). A sequentially
// consistent atomic on ordinary memory stands in for the fences.

var mlx5FenceWord uint32

func mlx5MMIOWrite64(p unsafe.Pointer, v uint64) { *(*uint64)(p) = v }
func mlx5WCFence()                               { atomic.AddUint32(&mlx5FenceWord, 1) }
func mlx5DMABarrier()                            { atomic.AddUint32(&mlx5FenceWord, 1) }
func mlx5DMAReadBarrier()                        { atomic.LoadUint32(&mlx5FenceWord) }
