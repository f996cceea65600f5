package inventory

import (
	"sync"
	"sync/atomic"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// fanoutWorkers bounds the goroutines of one fanout. The work is sysfs
// reads and uverbs opens that each wait on the kernel (on mlx5 a sysfs
// rate or a QUERY_PORT is a firmware command), not on Go, so a few in
// flight overlap those waits without crowding a small host.
const fanoutWorkers = 4

// fanout starts f(0) .. f(n-1) on up to fanoutWorkers goroutines and
// returns at once; the returned wait blocks until every call has
// returned. Each f(i) must write only what belongs to i; the caller reads
// the results after wait. The caller always calls wait, also on its own
// error paths, so that no worker outlives it.
func fanout(n int, f func(i int)) (wait func()) {
	if n <= 0 {
		return func() {}
	}
	return workers(min(n, fanoutWorkers), n, func(_, i int) { f(i) })
}

// workers starts k goroutines that run f(w, i) for i in [0, n), w being
// the worker's number, and returns wait, which blocks until all have
// returned and then raises a worker's panic.
func workers(k, n int, f func(w, i int)) (wait func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var p workerPanic
	for w := 0; w < k; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer p.catch()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(w, i)
			}
		}()
	}
	return func() {
		wg.Wait()
		p.raise()
	}
}

// workerPanic carries a worker's panic (a decoder's bug) to the goroutine
// that waits for the workers, so that whoever recovers there (the
// exporter's gathering) sees it, as it would without workers.
type workerPanic struct {
	mu  sync.Mutex
	val any
	set bool
}

func (p *workerPanic) catch() {
	if r := recover(); r != nil {
		p.mu.Lock()
		if !p.set {
			p.val, p.set = r, true
		}
		p.mu.Unlock()
	}
}

func (p *workerPanic) raise() {
	if p.set {
		panic(p.val)
	}
}

// forker is an NLDEV client that can open another socket like its own
// (*nldev.Client from nldev.Dial); an nltest fake cannot.
type forker interface {
	Fork() (*nldev.Client, error)
}

// devicesPerNLWorker: a worker with its own NLDEV socket (a few syscalls
// to open and close) is started for at least this many devices' requests.
const devicesPerNLWorker = 4

// nlFanout runs f(nl, i) for i in [0, n), each call with an NLDEV client
// that no other running call uses: the source's own on the first worker,
// a forked socket on each other, up to fanoutWorkers; it returns when all
// have returned and closes the forks. NLDEV requests of different devices
// are independent in the kernel (on mlx5 a port query is a firmware
// command), so at 128 devices the per-device dumps overlap instead of
// queueing behind each other as rdma's do. Few devices, a client that
// cannot fork (tests' fakes) or a fork that fails: fewer workers, down to
// the plain loop on the source's socket.
func (l *live) nlFanout(n int, f func(nl NL, i int)) {
	conns, done := l.nlWorkers(n)
	defer done()
	if len(conns) == 1 {
		for i := 0; i < n; i++ {
			f(l.nl, i)
		}
		return
	}
	workers(len(conns), n, func(w, i int) { f(conns[w], i) })()
}

// nlChunks is nlFanout over ranges: f(nl, lo, hi) once per worker, the
// ranges splitting [0, n) in order, so that each worker can send its
// range's requests together (nldev's batches).
func (l *live) nlChunks(n int, f func(nl NL, lo, hi int)) {
	if n <= 0 {
		return
	}
	conns, done := l.nlWorkers(n)
	defer done()
	k := len(conns)
	size := (n + k - 1) / k
	workers(k, k, func(w, c int) {
		lo := c * size
		if lo < n {
			f(conns[w], lo, min(lo+size, n))
		}
	})()
}

// nlWorkers is the clients for n devices' requests: the source's own,
// and a fork for each further worker (nlFanout); done closes the forks.
func (l *live) nlWorkers(n int) (conns []NL, done func()) {
	conns = []NL{l.nl}
	var forks []*nldev.Client
	if fk, ok := l.nl.(forker); ok {
		for len(conns) < min(fanoutWorkers, n/devicesPerNLWorker) {
			c, err := fk.Fork()
			if err != nil {
				break
			}
			forks = append(forks, c)
			conns = append(conns, c)
		}
	}
	return conns, func() {
		for _, c := range forks {
			c.Close()
		}
	}
}
