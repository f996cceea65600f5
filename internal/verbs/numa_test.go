package verbs

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestNewBufferOnNode: the pages of a buffer bound to node 0 are on node
// 0 (get_mempolicy MPOL_F_NODE|MPOL_F_ADDR), zeroed, and the mapping is
// closed as NewBuffer's.
func TestNewBufferOnNode(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/node/node0"); err != nil {
		t.Skip("this kernel shows no NUMA node 0")
	}
	b, bound, err := NewBufferOnNode(3*unix.Getpagesize()+1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !bound {
		// qemu's user mode (CI's arm64 step) implements no NUMA system
		// call: mbind and get_mempolicy are ENOSYS there.
		if _, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, 0, 0, 0, 0, 0, 0); e == unix.ENOSYS {
			t.Skip("no NUMA system calls here (get_mempolicy: ENOSYS)")
		}
		t.Fatal("not bound to node 0")
	}
	if b.Len() != 4*unix.Getpagesize() {
		t.Errorf("length %d", b.Len())
	}
	for i := 0; i < b.Len(); i += unix.Getpagesize() {
		const mpolFNode, mpolFAddr = 1, 2 // include/uapi/linux/mempolicy.h
		var node int32
		if _, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)), 0, 0,
			uintptr(unsafe.Pointer(&b.Bytes()[i])), mpolFNode|mpolFAddr, 0); e != 0 {
			t.Fatalf("get_mempolicy: %v", e)
		}
		if node != 0 || b.Bytes()[i] != 0 {
			t.Errorf("page %d: node %d, byte %d", i/unix.Getpagesize(), node, b.Bytes()[i])
		}
	}
	// A node without memory: the buffer, unbound (perftest goes on too).
	if b, bound, err := NewBufferOnNode(4096, 1000); err != nil || bound {
		t.Errorf("node 1000: bound %v, %v", bound, err)
	} else {
		b.Close()
	}
	if _, _, err := NewBufferOnNode(4096, 1024); err == nil {
		t.Error("node 1024: no error")
	}
}
