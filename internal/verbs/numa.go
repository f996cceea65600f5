package verbs

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mpolBind is MPOL_BIND (the kernel's include/uapi/linux/mempolicy.h):
// pages come from the given nodes only.
const mpolBind = 2

// NewBufferOnNode is NewBuffer with its pages on NUMA node node: the
// mapping is bound to the node (mbind MPOL_BIND) before any page is
// faulted in, then populated. Where the kernel cannot bind it (no NUMA;
// EINVAL for a node without memory) the pages are wherever the kernel
// puts them, and bound is false: perftest goes on without binding too.
func NewBufferOnNode(size, node int) (b *Buffer, bound bool, err error) {
	if size <= 0 {
		return nil, false, fmt.Errorf("verbs: buffer size must be positive, not %d", size)
	}
	if node < 0 || node >= 1024 {
		return nil, false, fmt.Errorf("verbs: NUMA node %d out of range", node)
	}
	ps := unix.Getpagesize()
	n := (size + ps - 1) / ps * ps
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, false, fmt.Errorf("verbs: cannot map a %d-byte buffer: %w", n, err)
	}
	var mask [1024 / 64]uint64
	mask[node/64] = 1 << (node % 64)
	// maxnode counts one more bit than the mask holds: the kernel's
	// get_nodes() (mm/mempolicy.c) reads maxnode-1 bits, as libnuma
	// passes them.
	_, _, errno := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(&mem[0])), uintptr(n), mpolBind,
		uintptr(unsafe.Pointer(&mask[0])), uintptr(len(mask)*64+1), 0)
	// Populate now (MAP_POPULATE's work, after the binding): a write to
	// every page.
	for i := 0; i < n; i += ps {
		mem[i] = 0
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(mem)
		return nil, false, fmt.Errorf("verbs: madvise(MADV_DONTFORK) on a %d-byte buffer: %w", n, err)
	}
	return &Buffer{mem: mem}, errno == 0, nil
}
