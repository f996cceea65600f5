package rdmacm

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// pipeChannel is a Channel whose rdma_cm fd is the write end of a pipe:
// a test reads back, from r, the command bytes a method writes. Both ends
// and the command memory are released when the test ends.
func pipeChannel(t *testing.T) (c *Channel, r *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(-1, 0, memSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	return &Channel{f: w, rc: rc, mem: mem}, r
}
