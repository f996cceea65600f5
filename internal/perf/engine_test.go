package perf

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestNewRunnerPrefaults: the arrays the loops write are resident when
// newRunner returns (mincore), so that no page fault lands in a loop.
func TestNewRunnerPrefaults(t *testing.T) {
	resident := func(name string, p unsafe.Pointer, n int) {
		t.Helper()
		pg := uintptr(os.Getpagesize())
		start := uintptr(p) &^ (pg - 1)
		end := (uintptr(p) + uintptr(n) + pg - 1) &^ (pg - 1)
		vec := make([]byte, (end-start)/pg)
		// mincore(2); x/sys/unix has no wrapper for it on linux.
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Fatalf("mincore: %v", errno)
		}
		out := 0
		for _, v := range vec {
			if v&1 == 0 {
				out++
			}
		}
		if out > 0 {
			t.Errorf("%s: %d of %d pages not resident", name, out, len(vec))
		}
	}
	const iters = 1 << 20 // 8 MiB of samples: fresh pages from the OS
	lat := newRunner(&Params{Test: TestLat, Iters: iters, QPs: 1, PostList: 1}, &Resources{QPs: make([]QP, 1)}, nil, nil, 0, new(atomic.Bool))
	resident("latency samples", unsafe.Pointer(&lat.posted[0]), len(lat.posted)*8)
	resident("completions", unsafe.Pointer(&lat.wcs[0]), len(lat.wcs)*int(unsafe.Sizeof(lat.wcs[0])))
	bw := newRunner(&Params{Test: TestBW, Iters: iters, QPs: 1, PostList: 1}, &Resources{QPs: make([]QP, 1)}, nil, nil, 0, new(atomic.Bool))
	resident("bandwidth event times", unsafe.Pointer(&bw.evT[0]), len(bw.evT)*8)
	resident("bandwidth event counts", unsafe.Pointer(&bw.evC[0]), len(bw.evC)*8)
	dur := newRunner(&Params{Test: TestLat, Duration: time.Second, QPs: 1, PostList: 1}, &Resources{QPs: make([]QP, 1)}, nil, nil, 0, new(atomic.Bool))
	resident("duration histogram", unsafe.Pointer(&dur.hist.counts[0]), len(dur.hist.counts)*8)
}
