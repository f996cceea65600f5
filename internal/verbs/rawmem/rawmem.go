// Package rawmem is the memory the uverbs ABI passes by address: the
// bytes of a command or response struct, the user address of a buffer the
// kernel or a device reads (ib_uverbs_cmd_hdr's response, a CQ's buf_addr
// in a provider's udata), and the bytes at such an address. The core
// (internal/verbs) and the providers share it.
package rawmem

import "unsafe"

// Of returns the memory of *p as a byte slice (no copy).
func Of[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// Addr is the user address of b's first byte as the kernel wants it (0
// for an empty slice).
func Addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

// At returns the n bytes at user address addr, which must be memory
// outside the Go heap (an mmap'd MR buffer). The address is reinterpreted
// rather than converted from uintptr so that vet's unsafeptr check, meant
// for Go heap pointers, does not apply; the memory is never moved or freed
// by the Go runtime. It is nosplit for the verbs detached data path.
//
//go:nosplit
func At(addr uint64, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}
