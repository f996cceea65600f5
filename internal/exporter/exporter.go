// Package exporter is rdmactl exporter's Prometheus collector: every scrape
// takes one inventory snapshot (devices, ports, GID tables, every counter
// `rdmactl counters` shows, optionally QPs) and turns it into metrics.
//
// A scrape waits at most Options.Timeout for its snapshot. The gathering
// goroutine is never abandoned and never doubled: while one runs, later
// scrapes wait on that same one instead of starting another, so a read
// that hangs in the kernel costs one goroutine, not one per scrape. A
// scrape that times out gets the last complete snapshot, marked by
// rdma_exporter_snapshot_stale 1 (and rdma_exporter_scrape_success 0).
package exporter

import (
	"fmt"
	"sync"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

// Options configure a Collector.
type Options struct {
	// Open gives a fresh inventory source for one snapshot (a Source caches
	// what it read) and a function that releases it (the netlink socket).
	Open func() (*inventory.Source, func(), error)
	// Timeout bounds how long one scrape waits for a snapshot.
	Timeout time.Duration
	// QP exports one rdma_qp_info series per queue pair, at most QPLimit.
	QP      bool
	QPLimit int
	// GIDInterval is how long GID table figures are reused before they are
	// read again (0: every snapshot).
	GIDInterval time.Duration
}

// DefaultQPLimit is the default cap on per-QP series.
const DefaultQPLimit = 1000

// Collector gives each scrape the series of one inventory snapshot.
type Collector struct {
	opts Options

	mu       sync.Mutex
	inflight chan struct{} // closed when the running gather ends; nil: none runs
	last     *Snapshot     // the last complete snapshot
	lastErr  error         // the last gather's error (nil: it succeeded)
	timeouts uint64        // scrapes that stopped waiting
	failures uint64        // gathers that failed
	gids     gidCache      // used by the one running gather only
	devs     devCache      // likewise
	absent   inventory.AbsentDirs
}

// New returns a Collector.
func New(o Options) *Collector {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.QPLimit <= 0 {
		o.QPLimit = DefaultQPLimit
	}
	return &Collector{opts: o, absent: inventory.AbsentDirs{}}
}

var (
	descSuccess = promtext.MustDesc("rdma_exporter_scrape_success",
		"1 if this scrape got a fresh, complete inventory snapshot, else 0.", promtext.Gauge)
	descStale = promtext.MustDesc("rdma_exporter_snapshot_stale",
		"1 if the RDMA series of this scrape are the last complete snapshot because the current one did not finish within the timeout.", promtext.Gauge)
	descAge = promtext.MustDesc("rdma_exporter_snapshot_age_seconds",
		"Age of the snapshot the RDMA series of this scrape come from.", promtext.Gauge)
	descDuration = promtext.MustDesc("rdma_exporter_snapshot_duration_seconds",
		"How long taking the served snapshot took.", promtext.Gauge)
	descTimeouts = promtext.MustDesc("rdma_exporter_scrape_timeouts_total",
		"Scrapes that stopped waiting for a snapshot after the timeout.", promtext.Counter)
	descFailures = promtext.MustDesc("rdma_exporter_snapshot_failures_total",
		"Snapshots that failed as a whole (no device list).", promtext.Counter)
	descReadErrors = promtext.MustDesc("rdma_exporter_read_errors",
		"Reads that failed in the served snapshot (a device or port that vanished meanwhile, an unreadable counter set); their series are missing.", promtext.Gauge)
)

// Collect takes or waits for one snapshot and returns its series with the
// exporter's own (success, staleness, age, errors) in front.
func (c *Collector) Collect() []promtext.Metric {
	snap, stale, err := c.current()
	success := 1.0
	if err != nil || stale || snap == nil {
		success = 0
	}
	ms := []promtext.Metric{{Desc: descSuccess, Value: success}, {Desc: descStale, Value: b2f(stale)}}
	c.mu.Lock()
	timeouts, failures := c.timeouts, c.failures
	c.mu.Unlock()
	ms = append(ms, promtext.Metric{Desc: descTimeouts, Value: float64(timeouts)},
		promtext.Metric{Desc: descFailures, Value: float64(failures)})
	if snap == nil {
		return ms
	}
	ms = append(ms, promtext.Metric{Desc: descAge, Value: time.Since(snap.at).Seconds()},
		promtext.Metric{Desc: descDuration, Value: snap.took.Seconds()},
		promtext.Metric{Desc: descReadErrors, Value: float64(snap.readErrors)})
	return append(ms, snap.metrics...)
}

// current returns a snapshot for one scrape: a fresh one if the gather
// finishes within the timeout, else the last complete one with stale true
// (nil if there is none yet). err is the failure of a gather that
// finished without a snapshot (then snap is nil: a host whose device list
// fails shows no stale devices).
func (c *Collector) current() (snap *Snapshot, stale bool, err error) {
	c.mu.Lock()
	done := c.inflight
	if done == nil {
		done = make(chan struct{})
		c.inflight = done
		go c.gather(done)
	}
	c.mu.Unlock()

	t := time.NewTimer(c.opts.Timeout)
	defer t.Stop()
	select {
	case <-done:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.lastErr != nil {
			return nil, false, c.lastErr
		}
		return c.last, false, nil
	case <-t.C:
		c.mu.Lock()
		defer c.mu.Unlock()
		c.timeouts++
		return c.last, true, fmt.Errorf("inventory snapshot: no answer within %v", c.opts.Timeout)
	}
}

// gather takes one snapshot and publishes it; done is closed after.
func (c *Collector) gather(done chan struct{}) {
	var s *Snapshot
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil { // a bug in a decoder must not kill the exporter
				err = fmt.Errorf("inventory snapshot: panic: %v", r)
			}
		}()
		s, err = c.take()
	}()
	c.mu.Lock()
	if err == nil {
		c.last = s
	} else {
		c.failures++
	}
	c.lastErr = err
	c.inflight = nil
	c.mu.Unlock()
	close(done)
}

func (c *Collector) take() (*Snapshot, error) {
	src, release, err := c.opts.Open()
	if err != nil {
		return nil, err
	}
	defer release()
	return take(src, c.opts, &c.gids, &c.devs, c.absent)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
