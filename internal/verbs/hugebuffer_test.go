package verbs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// NewHugeBuffer maps whole huge pages when the system has them free, and
// otherwise says so as the system's lack (ErrUnsupported), naming the
// sysctl that reserves them.
func TestNewHugeBuffer(t *testing.T) {
	hp, free := hugePageInfo()
	b, err := NewHugeBuffer(3 << 20)
	need := 0
	if hp > 0 {
		need = (3<<20 + hp - 1) / hp
	}
	if hp == 0 || free < need {
		if !errors.Is(err, ErrUnsupported) || (hp > 0 && !strings.Contains(err.Error(), "vm.nr_hugepages")) {
			t.Fatalf("Hugepagesize %d, %d free: %v", hp, free, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Len()%hp != 0 || b.Len() < 3<<20 {
		t.Fatalf("%d bytes, huge pages of %d", b.Len(), hp)
	}
	mem := b.Bytes()
	mem[0], mem[len(mem)-1] = 1, 2
	if _, after := hugePageInfo(); after > free-need {
		t.Fatalf("HugePages_Free %d after mapping %d of %d", after, need, free)
	}
}

// TestNewFileBuffer: --mmap's buffer is the file's pages, shared: what
// is written through the buffer is in the file. A file too short for
// the range, an unaligned offset, a FIFO and a missing file are refused
// with an error, never mapped (a shared mapping past EOF would SIGBUS).
func TestNewFileBuffer(t *testing.T) {
	ps := os.Getpagesize()
	dir := t.TempDir()
	path := filepath.Join(dir, "buf")
	if err := os.WriteFile(path, make([]byte, 3*ps), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewFileBuffer(path, int64(ps), ps+1)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2*ps {
		t.Errorf("length %d, want two pages", b.Len())
	}
	copy(b.Bytes(), "rdmactl")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got[ps:ps+7]) != "rdmactl" {
		t.Errorf("the file at the offset holds %q, want what the buffer got", got[ps:ps+7])
	}
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		offset int64
		size   int
		want   string
	}{
		{path, 2 * int64(ps), ps + 1, "make it larger"},
		{path, 1, ps, "not a multiple of the page size"},
		{fifo, 0, ps, "not a regular file"},
		{filepath.Join(dir, "none"), 0, ps, "no such file"},
		{path, 0, 0, "must be positive"},
	} {
		if b, err := NewFileBuffer(c.path, c.offset, c.size); err == nil || !strings.Contains(err.Error(), c.want) {
			if b != nil {
				b.Close()
			}
			t.Errorf("%s at %d, %d bytes: %v, want %q", c.path, c.offset, c.size, err, c.want)
		}
	}
}
