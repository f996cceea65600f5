package perf

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// --data_validation (perftest 6.29, write and read bandwidth over RC):
// the side whose memory receives the data checks every byte of it while
// the run goes on. As perftest (src/validation_common.h,
// src/host_validation.c, src/perftest_resources.c run_iter_bw_dv):
//
//   - Each side's buffer is [3 pattern messages][tail markers][receive
//     slots][atomic returns]; message k of pattern c is filled with the
//     byte c+1. A QP's receive slots are a ring of chunks_per_qp chunks of
//     ops_per_chunk messages each.
//   - The sender sends pattern c in its c-th pass around the ring (c mod
//     3) and, after the last message of each chunk, posts an unsignaled
//     FETCH_AND_ADD of 1 on the chunk's 8-byte tail marker in the peer's
//     memory. RC executes it after the chunk's writes (or, for read, its
//     answer lands after the chunk's read data), so a marker that reads n
//     says the chunk holds pattern n-1.
//   - Write: the writer's target is the peer's receive slots, the marker
//     is the peer's, and the peer validates. Read: the reader reads the
//     peer's pattern messages into its own receive slots, the fetched
//     value (the peer's markers start at 1) lands in its own atomic
//     returns, which are the markers the reader validates.
//   - Validators poll their markers and check a chunk when its marker
//     moves. A mismatch that a later pass explains (the next pattern
//     already overwriting the chunk) counts as a race, one that a
//     re-read of the chunk's tail clears counts as a stale read; any
//     other is an error.
//
// The key record carries the peer's tail markers' address (perftest's
// KEY_PRINT_FMT_DV), and the reader or the write target prints
// "VALIDATION: PASSED - N chunks, M bytes" (N counts messages, as
// perftest's) after its results, or FAILED with the first error.

// The fill patterns and ring limits of perftest's validation_common.h.
const (
	dvPatterns       = 3  // VALIDATION_PATTERNS_COUNT: bytes 0x01, 0x02, 0x03
	dvMaxChunksPerQP = 24 // VALIDATION_MAX_CHUNKS_PER_QP
	dvMinChunkBytes  = 64 << 10
	dvMaxChunkBytes  = 8 << 20
	dvLogPrefix      = "[DATA_VALIDATION]"
	dvMaxValidators  = 32       // HOST_VALIDATION_MAX_VALIDATORS
	dvMinValidators  = 4        // HOST_VALIDATION_DEFAULT_VALIDATORS
	dvRepollBytes    = 64 << 10 // VALIDATION_REPOLL_THRESHOLD_BYTES
	dvStopCheck      = 1024     // VALIDATOR_SPIN_CHECK_INTERVAL
)

// validateDataValidation is perftest's checks of --data_validation
// (src/perftest_parameters.c force_dependecies), in its order, and
// rdmactl's own where a combination would mean something else here.
func (p *Params) validateDataValidation() error {
	if !p.DataValidation {
		return nil
	}
	switch {
	case p.Verb != VerbWrite && p.Verb != VerbRead || p.WriteImm:
		return errors.New("--data_validation: write and read tests only, without --write_with_imm (as perftest)")
	case p.Test != TestBW:
		return errors.New("--data_validation: bandwidth tests only (as perftest)")
	case p.PostList > 1:
		return errors.New("--data_validation with -l: one message a post only (as perftest)")
	case p.RunInfinitely:
		return errors.New("--data_validation with --run_infinitely: the check reports at the end of a run (as perftest)")
	case p.Conn != RC:
		return errors.New("--data_validation needs -c RC: it marks each chunk with an RDMA atomic (as perftest)")
	case p.MRPerQP:
		return errors.New("--data_validation with --mr_per_qp: the QPs share one buffer of patterns and markers (as perftest)")
	case len(p.Payload) > 0:
		return errors.New("--data_validation with --payload_file_path: the check sends its own patterns (as perftest)")
	case p.AllSizes:
		return errors.New("--data_validation with -a: one message size a run (as perftest)")
	case p.TxDepth < 32:
		return fmt.Errorf("--data_validation needs a TX depth of at least 32, not %d: raise -t (or -n, which caps it; as perftest)", p.TxDepth)
	case p.MmapFile != "":
		return errors.New("--data_validation with --mmap: the check writes its patterns into the buffer, and rdmactl does not write into the mapped file")
	}
	_, err := newDVLayout(p)
	return err
}

// validates says whether this side checks data: the target of writes,
// the reader of reads, both sides of a bidirectional run.
func (p *Params) validates() bool {
	return p.DataValidation && (p.Bidir || p.passive() == (p.Verb == VerbWrite))
}

// dvPattern is the byte of pass c (0-based).
func dvPattern(c uint64) byte { return byte(1 + c%dvPatterns) }

// dvIsPattern says whether b is one of the fill bytes.
func dvIsPattern(b byte) bool { return b >= 1 && b <= dvPatterns }

// dvChunkOps is derive_validation_chunk_size: messages per marker,
// tx_depth unless a chunk of tx_depth messages would be under 64 KiB or
// over 8 MiB.
func dvChunkOps(payload, tx uint64) uint64 {
	raw, ops := payload*tx, tx
	switch {
	case payload == 0:
	case raw < dvMinChunkBytes:
		need := (dvMinChunkBytes + payload - 1) / payload
		ops = (need + tx - 1) / tx * tx
	case raw > dvMaxChunkBytes:
		target := dvMaxChunkBytes / payload
		if target >= tx {
			ops = target / tx * tx
		} else {
			ops = max(target, 1)
		}
	}
	return ops
}

// dvChunksPerQP is derive_validation_chunks_per_qp: the ring's depth,
// deeper for small chunks, few QPs and reads.
func dvChunksPerQP(chunkBytes uint64, qps int, read bool) uint64 {
	var base uint64
	switch {
	case chunkBytes < 128<<10:
		base = 12
	case chunkBytes < 512<<10:
		base = 10
	case chunkBytes < 2<<20:
		base = 8
	case chunkBytes < 8<<20:
		base = 6
	default:
		base = 4
	}
	switch {
	case qps <= 2:
		base *= 2
	case qps <= 4:
		base = base * 3 / 2
	}
	if read {
		base = base * 3 / 2
	}
	return min(base, dvMaxChunksPerQP)
}

// dvLayout is one run's validation buffer (compute_validation_layout):
// offsets from the buffer's start, 64-byte aligned.
type dvLayout struct {
	payload  uint64 // message size
	ops      uint64 // messages a chunk
	chunks   uint64 // chunks a QP
	qps      uint64
	read     bool
	markers  uint64 // tail markers: qps*chunks 8-byte words
	slots    uint64 // receive slots: qps*chunks*ops messages
	returns  uint64 // atomic returns: read qps*chunks words, write qps
	total    uint64
	slotsPer uint64 // slots a QP: ops*chunks
}

func align64(x uint64) uint64 { return (x + 63) &^ 63 }

// newDVLayout computes p's layout; p has passed validateDataValidation.
func newDVLayout(p *Params) (dvLayout, error) {
	l := dvLayout{payload: p.Size, qps: uint64(p.QPs), read: p.Verb == VerbRead}
	l.ops = dvChunkOps(p.Size, uint64(p.TxDepth))
	l.chunks = dvChunksPerQP(p.Size*l.ops, p.QPs, l.read)
	l.slotsPer = l.ops * l.chunks
	recv := l.payload * l.slotsPer * l.qps
	if recv/l.qps/l.slotsPer != l.payload || recv > 1<<40 {
		return l, fmt.Errorf("--data_validation: %d QPs of %d-byte messages need a %d-message ring each, more memory than a run may map; use fewer QPs (-q) or a smaller -s", p.QPs, p.Size, l.slotsPer)
	}
	returns := l.qps * 8
	if l.read {
		returns = l.qps * l.chunks * 8
	}
	l.markers = align64(3 * l.payload)
	l.slots = align64(l.markers + l.qps*l.chunks*8)
	l.returns = align64(l.slots + recv)
	l.total = l.returns + returns
	return l, nil
}

// chunkBytes is the size of one chunk.
func (l *dvLayout) chunkBytes() uint64 { return l.ops * l.payload }

// targetOff is what QP i's key record advertises (perftest's
// ctx_set_my_dest): the peer writes to its receive slots, or reads the
// pattern messages.
func (l *dvLayout) targetOff(i int) uint64 {
	if l.read {
		return 0
	}
	return l.slots + uint64(i)*l.slotsPer*l.payload
}

// watchOff is where the validating side's markers are: the tail markers
// the peer's atomics add to (write), or the values this side's atomics
// fetched (read).
func (l *dvLayout) watchOff() uint64 {
	if l.read {
		return l.returns
	}
	return l.markers
}

// fill writes the pattern messages and, for read, sets the tail markers
// to 1, so that a chunk's first fetch returns 1 (pass 0); the rest of buf
// is zero, as mapped.
func (l *dvLayout) fill(buf []byte) {
	for c := uint64(0); c < dvPatterns; c++ {
		b := buf[c*l.payload : (c+1)*l.payload]
		for k := range b {
			b[k] = dvPattern(c)
		}
	}
	if l.read {
		for m := uint64(0); m < l.qps*l.chunks; m++ {
			*(*uint64)(unsafe.Pointer(&buf[l.markers+m*8])) = 1
		}
	}
}

// dvDebugParams is perftest's --data_validation_debug line at parse time.
func dvDebugParams(l *dvLayout, tx int) string {
	cb := l.chunkBytes()
	return fmt.Sprintf("%s validation_chunk_size=%d (tx_depth=%d), chunk_bytes=%d, chunks_per_qp=%d, ring_size=%d bytes\n",
		dvLogPrefix, l.ops, tx, cb, l.chunks, cb*l.chunks)
}

// dvDebugBuffer is its lines once the buffer is filled.
func dvDebugBuffer(l *dvLayout) string {
	return fmt.Sprintf("Data validation: Initialized patterns (0x01, 0x02, 0x03), payload_size=%d\n"+
		"Data validation: tail_markers at offset %d, recv_slots at offset %d, total buffer %d (64-byte aligned)\n",
		l.payload, l.markers, l.slots, l.total)
}

// ValidationResult is what the validating side found (JSON "validation").
type ValidationResult struct {
	Passed bool `json:"passed"`
	// Chunks counts the messages validated (perftest's "chunks"), Bytes
	// their bytes.
	Chunks uint64 `json:"chunks"`
	Bytes  uint64 `json:"bytes"`
	Errors uint64 `json:"errors"`
	// First is the first error (nil: none).
	First *ValidationError `json:"first_error,omitempty"`
	// Races: mismatches explained by the next pass overwriting the chunk
	// already; Retries: mismatches in a chunk's tail that a re-read
	// cleared; Skips: marker steps passed over (the chunk was checked
	// with its latest pattern only).
	Races   uint64 `json:"races"`
	Retries uint64 `json:"retries"`
	Skips   uint64 `json:"skips"`
	// MarkersScanned and MarkersHit are the validators' polls and the
	// polls that found a chunk to check.
	MarkersScanned uint64 `json:"markers_scanned"`
	MarkersHit     uint64 `json:"markers_hit"`
	// Validators is how many ran, and what each did.
	Validators []ValidatorStats `json:"validators"`
}

// ValidationError locates the first byte that was not what was sent.
type ValidationError struct {
	QP       uint32 `json:"qp"`
	Chunk    uint32 `json:"chunk"`
	Offset   uint64 `json:"offset"` // within its message
	Expected byte   `json:"expected"`
	Actual   byte   `json:"actual"`
}

// ValidatorStats is one validator's share.
type ValidatorStats struct {
	Markers uint32 `json:"markers"` // markers owned
	Slots   uint64 `json:"slots"`   // messages validated
	Hits    uint64 `json:"hits"`
	Scans   uint64 `json:"scans"`
	Races   uint64 `json:"races"`
	Retries uint64 `json:"retries"`
}

// dvMarker is one chunk a validator watches.
type dvMarker struct {
	word     *uint64 // the marker, which the NIC changes
	last     uint64  // its value when last checked
	data     []byte  // the chunk
	qp, chnk uint32
}

// dvValidator is one validating goroutine and its markers.
type dvValidator struct {
	v       *validation
	markers []dvMarker
	st      ValidatorStats
	skips   uint64
}

// validation runs the validators of one side.
type validation struct {
	l       dvLayout
	ref     [dvPatterns][]byte // one chunk of each pattern, to compare with
	vals    []*dvValidator
	stop    atomic.Bool
	wg      sync.WaitGroup
	started bool

	errs     atomic.Uint64
	firstErr ValidationError // set by the validator whose error was the first
}

// dvValidators is perftest's get_num_validators: two a QP for write,
// three for read, at least 4, at most half the CPUs (perftest: of the
// device's NUMA node when known), 32, and the number of markers.
func dvValidators(l *dvLayout, cpus int) int {
	per := uint64(2)
	if l.read {
		per = 3
	}
	n := max(l.qps*per, dvMinValidators)
	if half := uint64(cpus / 2); cpus > 0 && n > half {
		n = half
	}
	n = min(n, dvMaxValidators, l.qps*l.chunks)
	return int(max(n, 1))
}

// newValidation prepares the validators over buf (this side's buffer,
// laid out as l) without starting them; cpus is how many CPUs they may
// have half of.
func newValidation(l dvLayout, buf []byte, cpus int) *validation {
	v := &validation{l: l}
	cb := l.chunkBytes()
	for c := range v.ref {
		v.ref[c] = bytes.Repeat([]byte{dvPattern(uint64(c))}, int(min(cb, 1<<20)))
	}
	n := dvValidators(&l, cpus)
	v.vals = make([]*dvValidator, n)
	for i := range v.vals {
		v.vals[i] = &dvValidator{v: v}
	}
	// Marker m (QP m/chunks, chunk m%chunks) goes to validator m%n, so
	// that each has chunks of every QP (perftest: "QP-balanced").
	for m := uint64(0); m < l.qps*l.chunks; m++ {
		q, c := m/l.chunks, m%l.chunks
		off := l.slots + (q*l.slotsPer+c*l.ops)*l.payload
		d := v.vals[m%uint64(n)]
		d.markers = append(d.markers, dvMarker{
			word: (*uint64)(unsafe.Pointer(&buf[l.watchOff()+m*8])),
			data: buf[off : off+cb : off+cb], qp: uint32(q), chnk: uint32(c)})
		d.st.Markers++
	}
	return v
}

// dvLoop is the sender's side of a run (run_iter_bw_dv): each post
// addresses the next slot of its QP's ring and, at a chunk's end, chains
// the fetch-and-add on the chunk's marker. Everything is set up before
// the loop; post only stores numbers.
type dvLoop struct {
	l       dvLayout
	local   uint64   // this side's buffer
	remote  []uint64 // per QP: the peer's target (Dest.VAddr)
	rkey    []uint32
	markers uint64           // the peer's tail markers
	wrs     [][]verbs.SendWR // per QP: the message and the fetch-and-add
	slot    []uint64         // per QP: the next slot of the ring
	pass    []uint64         // per QP: the pattern message of this pass
}

func newDVLoop(l dvLayout, local uint64, remote []Dest) *dvLoop {
	d := &dvLoop{l: l, local: local, remote: make([]uint64, len(remote)), rkey: make([]uint32, len(remote)),
		wrs: make([][]verbs.SendWR, len(remote)), slot: make([]uint64, len(remote)), pass: make([]uint64, len(remote))}
	for i, r := range remote {
		d.remote[i], d.rkey[i] = r.VAddr, r.RKey
		d.wrs[i] = make([]verbs.SendWR, 2)
	}
	if len(remote) > 0 {
		d.markers = remote[0].TailMarkers // one MR: QP 0's (perftest's rem_dest[0])
	}
	return d
}

// prepare takes the runner's message WRs over (r.wrs[i] becomes the
// first of the pair, so that the loop's signalling applies to it) and
// starts each ring at slot 0, pass 0.
func (d *dvLoop) prepare(r *runner) {
	for i := range d.wrs {
		if i >= len(r.wrs) {
			break
		}
		w := d.wrs[i]
		w[0] = r.wrs[i][0]
		w[1] = verbs.SendWR{WRID: uint64(i), Opcode: verbs.OpAtomicFetchAdd, CompareAdd: 1, RKey: d.rkey[i],
			SGE: verbs.SGE{Length: 8, LKey: w[0].SGE.LKey}}
		r.wrs[i] = w[:1]
		d.slot[i], d.pass[i] = 0, 0
		d.address(i)
	}
}

// address points QP i's pair at its current slot and pass, and says
// whether the slot ends a chunk (the pair is posted whole).
//
//go:nosplit
func (d *dvLoop) address(q int) bool {
	l := &d.l
	w := d.wrs[q]
	slot, pass := d.slot[q], d.pass[q]
	if l.read {
		w[0].SGE.Addr = d.local + l.slots + (uint64(q)*l.slotsPer+slot)*l.payload
		w[0].RemoteAddr = d.remote[q] + pass*l.payload
	} else {
		w[0].SGE.Addr = d.local + pass*l.payload
		w[0].RemoteAddr = d.remote[q] + slot*l.payload
	}
	if (slot+1)%l.ops != 0 {
		return false
	}
	tail := uint64(q)*l.chunks + slot/l.ops
	w[1].RemoteAddr = d.markers + tail*8
	ret := uint64(q) // write: a word a QP, whose value nobody reads
	if l.read {
		ret = tail // read: the chunk's own word, the reader's marker
	}
	w[1].SGE.Addr = d.local + l.returns + ret*8
	return true
}

// post sends QP q's next message (and marker) and moves to the next slot.
//
//go:nosplit
func (d *dvLoop) post(sq verbs.SendQueue, q int) error {
	n := 1
	if d.address(q) {
		n = 2
	}
	if err := sq.PostSend(d.wrs[q][:n]); err != nil {
		return err
	}
	if d.slot[q]++; d.slot[q] == d.l.slotsPer {
		d.slot[q] = 0
		d.pass[q] = (d.pass[q] + 1) % dvPatterns
	}
	return nil
}

// validators is how many validators this side runs (0: none).
func (p *Params) validators() int {
	if !p.validates() {
		return 0
	}
	l, err := newDVLayout(p)
	if err != nil {
		return 0
	}
	return dvValidators(&l, runtime.NumCPU())
}

// start runs the validators until finish (v nil: none).
func (v *validation) start() {
	if v == nil || v.started {
		return
	}
	v.started = true
	for _, d := range v.vals {
		v.wg.Add(1)
		go func() {
			defer v.wg.Done()
			d.run()
		}()
	}
}

// halt stops the validators, if they run, and waits for them: before the
// memory they read is unmapped.
func (v *validation) halt() {
	if v == nil {
		return
	}
	v.stop.Store(true)
	v.wg.Wait()
}

// finish stops the validators after a last look at every marker and
// returns what they found.
func (v *validation) finish() *ValidationResult {
	if !v.started {
		for _, d := range v.vals {
			d.drain()
		}
	}
	v.stop.Store(true)
	v.wg.Wait()
	r := &ValidationResult{Errors: v.errs.Load()}
	for _, d := range v.vals {
		r.Chunks += d.st.Slots
		r.Bytes += d.st.Slots * v.l.payload
		r.Races += d.st.Races
		r.Retries += d.st.Retries
		r.Skips += d.skips
		r.MarkersScanned += d.st.Scans
		r.MarkersHit += d.st.Hits
		r.Validators = append(r.Validators, d.st)
	}
	r.Passed = r.Errors == 0
	if !r.Passed {
		e := v.firstErr
		r.First = &e
	}
	return r
}

// run is validator_thread_fn: poll the markers, check a chunk whose
// marker moved (for write chunks of up to 64 KiB, again at once while it
// keeps moving), yield when nothing moved, look at the stop flag every
// 1024 idle rounds, and check every marker once more at the end.
func (d *dvValidator) run() {
	repoll := !d.v.l.read && d.v.l.chunkBytes() <= dvRepollBytes
	idle := 0
	for {
		found := false
		for i := range d.markers {
			m := &d.markers[i]
			d.st.Scans++
			val := atomic.LoadUint64(m.word)
			for val != m.last && val != 0 {
				found = true
				d.st.Hits++
				d.check(m, val)
				if !repoll {
					break
				}
				val = atomic.LoadUint64(m.word)
			}
		}
		if found {
			idle = 0
			continue
		}
		runtime.Gosched()
		if idle++; idle >= dvStopCheck {
			idle = 0
			if d.v.stop.Load() {
				break
			}
		}
	}
	d.drain()
}

// drain checks each marker that moved since its last check.
func (d *dvValidator) drain() {
	for i := range d.markers {
		m := &d.markers[i]
		if val := atomic.LoadUint64(m.word); val != m.last && val != 0 {
			d.st.Hits++
			d.check(m, val)
		}
	}
}

// check is validate_one_marker: m's chunk must hold pattern val-1.
func (d *dvValidator) check(m *dvMarker, val uint64) {
	v := d.v
	want := dvPattern(val - 1)
	if val-m.last > 1 {
		d.skips += val - m.last - 1
	}
	m.last = val
	d.st.Slots += v.l.ops
	bad := v.mismatch(m.data, want)
	if bad < 0 {
		return
	}
	n := uint64(len(m.data))
	tail := max(2*v.l.payload, 256)
	if uint64(bad) >= n-min(tail, n) {
		// The chunk's tail may not have been visible yet (perftest: a
		// PCIe flush still under way); look once more.
		again := v.mismatch(m.data[bad:], want)
		if again < 0 {
			d.st.Retries++
			return
		}
		bad += again
	}
	got := m.data[bad]
	if uint64(bad)+4 < n {
		f := m.data[bad+1 : bad+5]
		if dvIsPattern(got) && got != want && f[0] == got && f[1] == got && f[2] == got && f[3] == got {
			d.st.Races++ // the next pass is overwriting the chunk
			return
		}
	}
	if v.errs.Add(1) == 1 {
		v.firstErr = ValidationError{QP: m.qp, Chunk: m.chnk, Offset: uint64(bad) % v.l.payload, Expected: want, Actual: got}
	}
}

// mismatch returns the offset of the first byte of b that is not want,
// or -1.
func (v *validation) mismatch(b []byte, want byte) int {
	ref := v.ref[want-1]
	for off := 0; off < len(b); off += len(ref) {
		s := b[off:min(off+len(ref), len(b))]
		if bytes.Equal(s, ref[:len(s)]) {
			continue
		}
		for k := range s {
			if s[k] != want {
				return off + k
			}
		}
	}
	return -1
}

// dvRole is the report's role tag: none in a one-way run, "SERVER" or
// "CLIENT" in a bidirectional one (perftest's TCP roles).
func dvRole(p *Params) string {
	if !p.Bidir {
		return ""
	}
	if p.passive() {
		return " (SERVER)"
	}
	return " (CLIENT)"
}

// dvReport is perftest's data_validation_stop_and_report: the line on
// stdout for a pass, on stderr (errLine) for a failure or nothing
// checked, and with debug the markers' figures.
func dvReport(r *ValidationResult, role string, debug bool) (out, errLine string) {
	var b strings.Builder
	switch {
	case !r.Passed:
		e := r.First
		return "", fmt.Sprintf("VALIDATION: FAILED%s - %d error(s), first at QP %d, Chunk %d, Offset %d (expected 0x%02x, got 0x%02x)\n",
			role, r.Errors, e.QP, e.Chunk, e.Offset, e.Expected, e.Actual)
	case r.Chunks == 0:
		return "", fmt.Sprintf("VALIDATION: WARNING%s - no data validated\n", role)
	}
	fmt.Fprintf(&b, "VALIDATION: PASSED%s - %d chunks, %d bytes", role, r.Chunks, r.Bytes)
	if r.Races != 0 || r.Retries != 0 || r.Skips != 0 {
		fmt.Fprintf(&b, " [races=%d, retries=%d, skips=%d, queue_full=0, stale_work=0]", r.Races, r.Retries, r.Skips)
	}
	b.WriteString("\n")
	if debug {
		fmt.Fprintf(&b, "  Markers: %d scanned, %d hit", r.MarkersScanned, r.MarkersHit)
		if r.MarkersScanned > 0 {
			fmt.Fprintf(&b, " (%.4f%% hit rate)", 100*float64(r.MarkersHit)/float64(r.MarkersScanned))
		}
		b.WriteString("\n")
		if r.Skips != 0 {
			fmt.Fprintf(&b, "  Skipped steps: %d (marker jumps > 1)\n", r.Skips)
		}
		if r.Races != 0 {
			fmt.Fprintf(&b, "  Race overwrites: %d (epoch guard suppressions)\n", r.Races)
		}
		if r.Retries != 0 {
			fmt.Fprintf(&b, "  DMA stale retries: %d (tail flush resolved)\n", r.Retries)
		}
	}
	return b.String(), ""
}

// validationReport ends the validators of a side that checks, prints
// perftest's line and fails the run on an error or on nothing checked
// (perftest prints its FAILED or WARNING line and exits 0: rdmactl exits
// 6, so that a script sees corrupted data without parsing the report).
func (s *Session) validationReport() error {
	if s.val == nil {
		return nil
	}
	r := s.val.finish()
	s.result.Validation = r
	out, errLine := dvReport(r, dvRole(s.P), s.P.DataValidationDebug)
	s.printPlain(out)
	if errLine != "" && s.P.Report.AsPerftest {
		s.note(strings.TrimSuffix(errLine, "\n"))
	}
	switch {
	case !r.Passed:
		e := r.First
		return peerErrorf("--data_validation: %d error(s) in the data received, the first in QP %d chunk %d at byte %d of its message: 0x%02x, want 0x%02x", r.Errors, e.QP, e.Chunk, e.Offset, e.Actual, e.Expected)
	case r.Chunks == 0:
		return peerErrorf("--data_validation: no chunk of %d messages was completed, so nothing was checked; run more iterations (-n) or longer (-D)", s.dv.ops)
	}
	return nil
}
