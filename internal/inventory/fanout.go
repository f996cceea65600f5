package inventory

import (
	"sync"
	"sync/atomic"
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
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(n, fanoutWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	return wg.Wait
}
