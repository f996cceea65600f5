package verbs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Buffer is memory for RDMA: the payload of memory regions. It is never
// Go heap (the kernel pins its pages and the device reads and writes them
// behind the runtime's back), but an anonymous mapping:
//
//   - MAP_PRIVATE|MAP_ANONYMOUS: ordinary anonymous pages, the same kind
//     of memory libibverbs users get from malloc/posix_memalign, and what
//     was seen to register on rxe (kernel 6.1). (MAP_SHARED anonymous
//     memory would be shmem pages: different accounting, no THP by default,
//     and nothing gained, since MADV_DONTFORK already settles fork.)
//   - MAP_POPULATE: fault every page in now, so that neither REG_MR nor the
//     first benchmark iteration pays for page faults.
//   - MADV_DONTFORK: a fork (not the vfork-style exec Go uses, but a real
//     one from anywhere) must not turn registered pages copy-on-write in the
//     parent (rdma-core libibverbs/memory.c madvises MRs the same way).
//
// The size is rounded up to whole pages; registering pins whole pages
// anyway. Close refuses while a memory region still uses the buffer
// (never unmap before DEREG_MR: the device may still write the pinned
// pages).
type Buffer struct {
	mu     sync.Mutex
	mem    []byte
	regs   int // live MRs on this buffer
	closed bool
}

// NewBuffer maps size bytes (rounded up to the page size) of zeroed memory.
func NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("verbs: buffer size must be positive, not %d", size)
	}
	ps := unix.Getpagesize()
	n := (size + ps - 1) / ps * ps
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("verbs: cannot map a %d-byte buffer: %w", n, err)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("verbs: madvise(MADV_DONTFORK) on a %d-byte buffer: %w", n, err)
	}
	return &Buffer{mem: mem}, nil
}

// NewHugeBuffer is NewBuffer from the system's default huge pages
// (MAP_HUGETLB: hugetlbfs pages, as perftest's --use_hugepages gets from
// SHM_HUGETLB), size rounded up to whole huge pages. The pages are
// reserved when mapped: without enough free ones (vm.nr_hugepages) it
// fails at once, wrapping ErrUnsupported.
func NewHugeBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("verbs: buffer size must be positive, not %d", size)
	}
	hp, free := hugePageInfo()
	if hp <= 0 {
		return nil, fmt.Errorf("verbs: this kernel has no huge pages (no Hugepagesize in /proc/meminfo): %w", ErrUnsupported)
	}
	n := (size + hp - 1) / hp * hp
	short := func() error {
		return fmt.Errorf("verbs: %d free huge pages of %d KiB, %d needed (reserve them: sysctl vm.nr_hugepages): %w", free, hp>>10, n/hp, ErrUnsupported)
	}
	if free < n/hp {
		return nil, short()
	}
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_HUGETLB|unix.MAP_POPULATE)
	switch {
	case err == unix.ENOMEM:
		return nil, short() // taken by another process since /proc/meminfo was read
	case err == unix.EINVAL:
		// MAP_HUGETLB refused outright (mm/mmap.c: no hugetlbfs mount
		// for the default size; qemu-user does not emulate it).
		return nil, fmt.Errorf("verbs: this system does not map huge pages for processes (mmap MAP_HUGETLB: %v): %w", err, ErrUnsupported)
	case err != nil:
		return nil, fmt.Errorf("verbs: cannot map a %d-byte huge-page buffer: %w", n, err)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("verbs: madvise(MADV_DONTFORK) on a %d-byte buffer: %w", n, err)
	}
	return &Buffer{mem: mem}, nil
}

// NewFileBuffer maps size bytes (rounded up to the page size) of the file
// at path, from offset, shared: memory regions on the buffer are the
// file's pages, as perftest's --mmap (src/perftest_resources.c
// pp_init_mmap: O_RDWR, MAP_SHARED). The file must be a regular file (a
// sysfs resource file is one; a FIFO or a device is refused, not opened
// for long) that holds the whole range: a shared mapping past the end of
// a file faults (SIGBUS) where it is touched, so a short file is refused
// here. offset must be a multiple of the page size, as mmap(2) wants.
func NewFileBuffer(path string, offset int64, size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("verbs: buffer size must be positive, not %d", size)
	}
	ps := unix.Getpagesize()
	if offset < 0 || offset%int64(ps) != 0 {
		return nil, fmt.Errorf("verbs: %s: offset %d is not a multiple of the page size (%d)", path, offset, ps)
	}
	n := (size + ps - 1) / ps * ps
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("verbs: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("verbs: %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("verbs: %s is not a regular file", path)
	}
	if st.Size < offset+int64(n) {
		return nil, fmt.Errorf("verbs: %s holds %d bytes; %d from offset %d are needed (make it larger: truncate -s %d)", path, st.Size, n, offset, offset+int64(n))
	}
	mem, err := unix.Mmap(fd, offset, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("verbs: cannot map %d bytes of %s at offset %d: %w", n, path, offset, err)
	}
	if err := unix.Madvise(mem, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("verbs: madvise(MADV_DONTFORK) on %s's mapping: %w", path, err)
	}
	return &Buffer{mem: mem}, nil
}

// hugePageInfo is /proc/meminfo's Hugepagesize (bytes; 0 if none) and
// HugePages_Free.
func hugePageInfo() (size, free int) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		switch f[0] {
		case "Hugepagesize:":
			size = v << 10 // kB
		case "HugePages_Free:":
			free = v
		}
	}
	return size, free
}

// Bytes is the buffer's memory. It stays valid until Close.
func (b *Buffer) Bytes() []byte { return b.mem }

// Len is the buffer's size in bytes (a multiple of the page size).
func (b *Buffer) Len() int { return len(b.mem) }

// Addr is the buffer's user virtual address, as put in SGEs and REG_MR.
func (b *Buffer) Addr() uint64 { return rawmem.Addr(b.mem) }

// ref and unref count the memory regions registered on the buffer.
func (b *Buffer) ref() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.regs++
	return nil
}

func (b *Buffer) unref() {
	b.mu.Lock()
	b.regs--
	b.mu.Unlock()
}

// Close unmaps the buffer. It fails while a memory region is registered on
// it: close the MR first. A second Close returns nil.
func (b *Buffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	if b.regs > 0 {
		return fmt.Errorf("verbs: buffer at %#x still has %d memory region(s) registered: close them first", b.Addr(), b.regs)
	}
	b.closed = true
	err := unix.Munmap(b.mem)
	b.mem = nil
	return err
}
