package perf

import "os"

// PinnedBytes is the memory a run with p pins (registers as one MR): what
// RLIMIT_MEMLOCK must allow, less the queues some drivers also pin. p gets
// its defaults first; the cycle buffer is one page, as a run without a
// peer's larger one uses. doctor compares RLIMIT_MEMLOCK with it, so that
// its verdict and a failing run's MemlockError agree.
func PinnedBytes(p Params) uint64 {
	p.Defaults()
	page := uint64(os.Getpagesize())
	return (bufSize(&p, page) + page - 1) / page * page
}
