// Package perf is rdmactl's benchmark engine: perftest's
// ib_{send,write,read}_{bw,lat} over internal/verbs, wire-compatible with
// perftest's TCP exchange.
//
// Layout:
//   - wire.go: the exchange records (version, system data, MTU, key
//     records, BW report), byte-exact, validated on read, fuzzed.
//   - conn.go: the TCP channel (client writes first, server reads first,
//     deadlines, keepalive, PeerError).
//   - session.go: one side of a run, with perftest's per-test sequence of
//     exchanges (perftest v4.5-0.17 src/*_bw.c and *_lat.c), the peer
//     watcher, progress and interval reports.
//   - engine.go, detach.go: the measurement loops (allocation- and
//     lock-free); rtloop/: how they run (detached or plain).
//   - stats.go, report.go: figures and perftest's report layout.
//   - device.go, device_verbs.go: what a run needs from a device, and its
//     implementation over internal/verbs.
//   - cm.go, cm_session.go: -R, the connection through the RDMA CM
//     (internal/rdmacm) as perftest 6.06 makes it: the exchange as SENDs
//     on a CM-connected comm QP, the data QPs moved by the CM's attributes.
//   - events.go, infinite.go, counters.go: -e (completion events: arm,
//     poll again, wait on the channel), --run_infinitely (-D periods until
//     Ctrl-C), -W and --counters (counter changes over the run);
//     docs/perf-events.md.
//
// Compatibility: we claim exchange version "6.27 rdmactl". perftest >= 5.70
// accepts it; peers >= 6.28 then skip their build-dependent negotiation
// struct, as we do. Two rdmactl peers recognise the suffix and also compare
// the symmetric options (a 256-byte parameter record after the MTU
// record), so a mismatch fails at once on both sides with the option named.
// Against perftest, a size mismatch is caught where the protocol allows:
// a write/read server checks the client's report, a send receiver the
// length of each message (or the run stalls and says so).
//
// Deliberate differences from perftest (numbers):
//   - Clock: Go's monotonic nanosecond clock, not TSC cycles converted
//     with a measured CPU frequency (no "Conflicting CPU frequency" and no
//     negative figures). It is read once per completion batch in bandwidth
//     loops and once per iteration, after the post, in latency loops.
//   - Bandwidth average: as perftest, first post to last completion.
//     Peak: the best rate between two completion events at least one
//     pipeline (TX depth × QPs messages) apart, never below the average;
//     perftest takes the best per-message post-to-completion slope.
//   - Latency: all samples are kept (perftest drops the two largest, and
//     its t_max is the third largest). Ping-pong samples are periods
//     between two posts: iters-1 on the side that answers, as perftest,
//     and iters-2 on the side that starts, which skips its first period
//     because it also holds the peer's start (a perftest peer calibrates
//     its clock for about 220 ms after the last handshake). The standard
//     deviation is exact float64 (perftest truncates each deviation to an
//     integer). Percentiles are nearest-rank on all samples. READ latency
//     is the period between completions (post-to-post), as perftest.
//   - Duration mode (-D) prints the full latency table (perftest: only the
//     average and tps), from a log-linear histogram (<1% bucket error;
//     min, max, average and stdev exact). Samples count only between the
//     warm-up and cool-down margins (2 s, at most a quarter of -D each).
//   - Bandwidth duration mode measures between the margins too and, like
//     perftest, has no peak.
//   - -b with send runs perftest's run_iter_bi: one loop posts this
//     side's messages and receives the peer's; each side's BW is its
//     sending half, and both print the sum. In -D mode there is no
//     report exchange (as perftest): each side counts what it sent and
//     received in its own window, which also comes to the sum.
//   - The session runs on one Go P (when it is alone in the process) and
//     its loops yield to the scheduler now and then: otherwise the
//     runtime's preemption every 10 ms moves it between threads, which
//     shows as millisecond latency outliers on busy CPUs.
//   - Where perftest versions differ, current perftest is followed
//     (docs/perf.md): the BW header says MiB/sec (6.06: MB/sec for the
//     same figures), and the automatic GID choice prefers a global GID
//     over a link-local one (sysfs.BestGID; 6.06 has no such rule).
//   - QoS and path options (qos.go) go into the QPs and AHs only, never
//     onto the exchange; -T works without -R, as --tclass; --retry_count
//     sets the QP's retry count without -R too. Thresholds (limits.go)
//     end a run that misses one with a LimitError (exit 7).
//   - How the loops run is package rtloop's business, the only code that
//     reaches into the Go runtime: on rxe, detached from the scheduler
//     (no P runs, so the runtime's monitor thread sleeps instead of
//     preempting them; it is also set to SCHED_IDLE, and a sole session's
//     latency loops run on a thread with a private file table), else, or
//     when the process's mode is plain (--loop, RDMACTL_PERF_LOOP, or a
//     failed probe), attached, as ordinary Go code. perf sees only its
//     Device: the detached queues are optional methods of the queues
//     (DetachableQP, DetachableCQ, WatchableCQ). Every test has one loop
//     (detach.go), for both modes: nosplit, no allocation, no pointer
//     stores, the clock from rtloop.Now. The arrays a loop writes are
//     faulted in when they are made (prefault), so that no page fault
//     lands in a loop. A latency wait spins as perftest's does, with a
//     load and a compare a round and no call (spinDetached, waitRing):
//     under TCG a heavier spin slowed the other vCPU, which carries the
//     peer's message.
package perf
