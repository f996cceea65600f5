package perf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Verb is the RDMA operation under test.
type Verb int

const (
	VerbSend Verb = iota
	VerbWrite
	VerbRead
	VerbAtomic // perf atomic (atomic.go)
)

func (v Verb) String() string { return [...]string{"send", "write", "read", "atomic"}[v] }

// isReadLike says whether v's runs are RDMA READ's: the server's memory is
// the target, outstanding operations are limited by max_qp_rd_atom, and
// nothing is inline (READ and the atomics).
func (v Verb) isReadLike() bool { return v == VerbRead || v == VerbAtomic }

// Test is what is measured.
type Test int

const (
	TestBW Test = iota
	TestLat
)

func (t Test) String() string { return [...]string{"bw", "lat"}[t] }

// Transport is the QP type (perftest -c).
type Transport int

const (
	RC Transport = iota
	UC
	UD
)

func (t Transport) String() string { return [...]string{"RC", "UC", "UD"}[t] }

// ParseTransport parses -c.
func ParseTransport(s string) (Transport, error) {
	switch strings.ToUpper(s) {
	case "RC":
		return RC, nil
	case "UC":
		return UC, nil
	case "UD":
		return UD, nil
	}
	return 0, fmt.Errorf("unknown connection type %q: want RC, UC or UD", s)
}

// Params are one run's options, as perftest's user_param. Fields marked
// SYMMETRIC must match on both sides.
type Params struct {
	Verb Verb      // SYMMETRIC
	Test Test      // SYMMETRIC
	Conn Transport // SYMMETRIC

	Server bool
	Host   string // client: server address
	Bind   string // server: listen address ("" = all)
	Port   int    // SYMMETRIC TCP port

	Device   string
	IBPort   int
	GIDIndex int  // with UserGID; else perftest's scoring picks one
	UserGID  bool // -x given
	// Mcast is -g: a multicast run (mcast.go); MGID is -M's group, with
	// UserMGID.
	Mcast    bool
	MGID     [16]byte
	UserMGID bool
	// Connectionless (--connectionless, perftest 6.29) is a multicast
	// receiver with no exchange and no peer (mcast.go).
	Connectionless bool
	// ForceLink is --force-link: the link layer to run as, in place of
	// the port's (0: the port's).
	ForceLink vocab.LinkLayer
	// IPv6 (--ipv6) makes the scoring prefer IPv6 GIDs over IPv4-mapped
	// ones, as perftest's get_best_gid_index with user_param->ipv6.
	IPv6 bool

	Size     uint64        // SYMMETRIC
	AllSizes bool          // SYMMETRIC
	Iters    uint64        // SYMMETRIC (iteration mode)
	Duration time.Duration // SYMMETRIC; 0 = iteration mode
	Margin   time.Duration // warm-up/cool-down excluded in duration mode
	QPs      int           // SYMMETRIC
	TxDepth  int
	RxDepth  int
	Inline   int // bytes; InlineDeviceDefault until ResolveInline
	PostList int
	CQMod    int
	MTU      int  // 0: port's active MTU; the smaller of both sides is used
	Bidir    bool // SYMMETRIC
	Gbits    bool // report Gb/s
	OutReads int  // READ depth offered (0: device max)

	Interval  time.Duration // per-interval reports (0: off)
	Histogram bool
	Unsorted  bool // print every latency sample in the order taken (-U)
	Progress  bool // live progress line
	// Loop asks for a loop mode (rtloop.Select; Auto: the environment,
	// else the probe). The process's first session decides.
	Loop rtloop.Mode

	// RDMA CM (-R, perftest's --rdma_cm): the exchange runs over an RC
	// connection the RDMA CM sets up on Port, and the CM connects the QPs
	// (cm.go). RC only.
	RDMACM bool
	// CommCM (-z, perftest's --comm_rdma_cm): the exchange runs over the
	// RDMA CM as with -R, but the QPs are the device's own, connected
	// from the exchanged keys as over TCP.
	CommCM bool

	// Events and counters (events.go, infinite.go,
	// counters.go):
	// UseEvent (-e) waits for completions on a completion channel.
	UseEvent bool
	// CompVector (-X) is the completion vector of the CQs with UseEvent
	// (0 by default, as perftest's eq_num).
	CompVector int
	// RunInfinitely (--run_infinitely, SYMMETRIC) repeats -D periods
	// (default 5 s), a report each, until Ctrl-C; bandwidth tests only.
	RunInfinitely bool
	// ReportCounters (-W) are counter files under the port's sysfs
	// directory ("counters/port_xmit_data,hw_counters/out_of_buffer"),
	// whose change over the run is printed as perftest does.
	ReportCounters []string
	// CounterDeltas (--counters) reports the change over the run of the
	// port's counters that explain a bad run (vocab's categories).
	CounterDeltas bool

	// Set by defaults: which of the above the user gave.
	UserCQMod, UserSize, UserInline bool

	// Atomics and SRQ (atomic.go and srq.go): perf atomic's -A, and
	// --use-srq for send tests.
	Atomic AtomicOp // SYMMETRIC (perf atomic)
	UseSRQ bool
	// QoS and path options (qos.go), and the thresholds of a CI run
	// (limits.go). Neither is exchanged with the peer.
	QoS    QoS
	Limits Limits
	// Report holds -N, --output and whether -f was given (reportopts.go).
	Report ReportOpts
	// WarmUp (--perform_warm_up) runs a warm-up before each measurement
	// (warmup.go).
	WarmUp bool
	// WaitDestroy (--wait_destroy) keeps the resources that long after
	// the run (waitdestroy.go).
	WaitDestroy time.Duration
	// LatencyGap (--latency_gap) is spun before each post of a latency
	// loop (latencygap.go).
	LatencyGap time.Duration
	// CQEPoll (--cqe_poll) is how many completions a bandwidth loop asks
	// each poll for (0: 64; engine.go cqePoll).
	CQEPoll int
	// HugePages (--use_hugepages) takes the buffer from huge pages.
	HugePages bool
	// NoRelaxedOrdering (--disable_pcie_relaxed) registers the memory
	// without PCIe relaxed ordering (relaxedOrdering).
	NoRelaxedOrdering bool
	// Reversed (--reversed) swaps the benchmark's roles and keeps the
	// exchange's: the side that listens sends (passive reports it).
	Reversed bool
	// MmapFile (--mmap) is a file whose pages, from MmapOffset
	// (--mmap-offset), are the buffer (verbs.NewFileBuffer).
	MmapFile   string
	MmapOffset int64
	// ODP (--odp) registers the memory with On-Demand Paging.
	ODP bool
	// RateLimit is perftest's rate limiter (ratelimit.go).
	RateLimit RateLimit
	// SendImm (--send_with_imm): send tests send with immediate data,
	// and a receiver fails on a message without (perftest 6.29).
	SendImm bool
	// Payload (--payload_file_path, LoadPayload) is repeated through the
	// buffer before the run (fillPayload); nil: the buffer as mapped.
	Payload []byte
	// DLID (--dlid), if not 0, is the peer's LID in place of the one it
	// sent: the address its QPs connect to on InfiniBand, and the LID of
	// the remote address lines, as perftest (ctx_modify_qp_to_rtr,
	// ctx_print_pingpong_data). A RoCE port routes by GID: the kernel
	// ignores a LID there, as it ignores perftest's.
	DLID int
	// RecvPostList (--recv_post_list) posts receives in lists of this
	// many, each list once all its receives have completed (0 or 1:
	// one at a time).
	RecvPostList int
	// WriteImm (--write_with_imm): write tests write with immediate
	// data, so each message also completes on the receiver's receive
	// queue, whose loops are then send's (perftest 6.29's WRITE_IMM).
	WriteImm bool
	// IPv6Addr (--ipv6-addr) runs the TCP exchange over IPv6 only, as
	// perftest's ai_family AF_INET6 (IPv4 or IPv6 otherwise).
	IPv6Addr bool
	// MRPerQP (--mr_per_qp) registers a memory region a QP.
	MRPerQP bool
	// OnNUMANode puts the buffer's pages on NUMA node NUMANode (the
	// command's NUMA placement: --numa_node, or the device's node).
	OnNUMANode bool
	NUMANode   int
	// DataValidation (--data_validation, SYMMETRIC) checks every byte
	// written or read while the run goes on (validation.go);
	// DataValidationDebug (--data_validation_debug) prints its figures.
	DataValidation      bool
	DataValidationDebug bool
}

// portName names the run's port as rdmactl's commands take it: DEV/PORT.
func (p *Params) portName() string { return fmt.Sprintf("%s/%d", p.Device, p.IBPort) }

// Defaults fills unset fields as perftest does for this test.
func (p *Params) Defaults() {
	if p.Port == 0 {
		p.Port = 18515
	}
	if p.IBPort == 0 {
		p.IBPort = 1
	}
	if p.Size == 0 {
		if p.Verb == VerbAtomic {
			p.Size = verbs.AtomicSize // perftest's DEF_SIZE_ATOMIC
		} else if p.Test == TestBW {
			p.Size = 65536
		} else {
			p.Size = 2
		}
	} else {
		p.UserSize = true
	}
	if p.Iters == 0 {
		if p.Test == TestBW && p.Verb == VerbWrite {
			p.Iters = 5000
		} else {
			p.Iters = 1000
		}
	}
	if p.QPs == 0 {
		p.QPs = 1
	}
	if p.WarmUp && (p.Test != TestBW || p.recvComp()) {
		// perftest takes --perform_warm_up in every test and warms up
		// only in write_bw, read_bw and atomic_bw (src/*_bw.c): scripts
		// pass it to all eight.
		p.WarmUp = false
	}
	if p.TxDepth == 0 {
		if p.Test == TestBW {
			p.TxDepth = 128
		} else {
			p.TxDepth = 1
		}
	}
	if p.RxDepth == 0 {
		if p.recvComp() {
			p.RxDepth = 512
		} else {
			p.RxDepth = 1
		}
	}
	p.fitDepthsToIters()
	if p.PostList == 0 {
		p.PostList = 1
	}
	if p.CQMod == 0 {
		p.CQMod = 100
		if p.PostList > 1 {
			p.CQMod = p.PostList
		}
		// perftest: big messages signal every WR so that BW math stays
		// accurate (not for UD).
		if p.Size > 8192 && p.Conn != UD && !p.AllSizes {
			p.CQMod = 1
		}
	} else {
		p.UserCQMod = true
	}
	if p.Inline < 0 {
		// perftest's DEF_INLINE: the device's default, which needs the
		// device (Session.Run calls ResolveInline once it has it).
		p.Inline = InlineDeviceDefault
	} else if p.Inline > 0 {
		p.UserInline = true
	}
	if p.Duration > 0 && p.Margin == 0 && !p.Report.UserMargin {
		p.Margin = 2 * time.Second
		if p.Margin > p.Duration/4 {
			p.Margin = p.Duration / 4
		}
	}
	if p.TxDepth < p.CQMod {
		p.CQMod = p.TxDepth
	}
	p.eventDefaults()
}

// Validate checks the options for consistency, with one line per problem
// naming the option.
func (p *Params) Validate() error {
	if err := p.QoS.validate(); err != nil {
		return err
	}
	if p.RDMACM {
		if err := p.QoS.validateCM(); err != nil {
			return err
		}
	}
	if err := p.Limits.validate(p.Test); err != nil {
		return err
	}
	switch {
	case p.Conn == UD && p.Verb != VerbSend:
		return errors.New("-c UD works only with send (RDMA write and read need a connection)")
	case p.Conn == UC && p.Verb == VerbRead:
		return errors.New("-c UC does not support RDMA read; use RC")
	case p.Verb == VerbAtomic && p.Conn != RC:
		return errors.New("atomics need -c RC")
	case p.Verb == VerbAtomic && (p.Size != verbs.AtomicSize || p.AllSizes):
		return fmt.Errorf("-s %d: the message size of atomic tests is 8 and cannot be changed (as perftest; no -a)", p.Size)
	case p.Verb == VerbAtomic && p.UserInline && p.Inline > 0:
		return errors.New("-I: atomics are never inline")
	case p.UseSRQ && p.Verb != VerbSend:
		return errors.New("--use-srq applies to send tests only (as perftest)")
	case p.UseSRQ && p.Conn == UD:
		return errors.New("--use-srq: this data path has SRQ for RC and UC QPs only")
	case p.Reversed && p.cmExchange():
		return errors.New("--reversed with -R or -z: perftest swaps the RDMA CM's roles too, so the side without an address would have to connect; run --reversed over TCP")
	case p.MmapFile != "" && p.HugePages:
		return errors.New("--mmap and --use_hugepages: the buffer is the file's pages or huge pages, not both")
	case p.MmapFile == "" && p.MmapOffset != 0:
		return errors.New("--mmap-offset needs --mmap")
	case p.MmapOffset < 0 || p.MmapOffset%int64(os.Getpagesize()) != 0:
		return fmt.Errorf("--mmap-offset %d: a multiple of the page size (%d), as mmap(2) needs", p.MmapOffset, os.Getpagesize())
	case p.Port < 1 || p.Port > 65535:
		return fmt.Errorf("-p %d: TCP port must be 1..65535", p.Port)
	case p.IBPort < 1 || p.IBPort > 255:
		return fmt.Errorf("-i %d: device ports are numbered 1..255", p.IBPort)
	case p.Size < 1 || p.Size > maxMsgSize:
		return fmt.Errorf("-s %d: message size must be 1..%d", p.Size, maxMsgSize)
	case p.Duration == 0 && p.Iters < 5:
		return fmt.Errorf("-n %d: at least 5 iterations (as perftest)", p.Iters)
	case p.Iters > 1<<40:
		return fmt.Errorf("-n %d: too many iterations", p.Iters)
	case p.QPs < 1 || p.QPs > 16384:
		return fmt.Errorf("-q %d: number of QPs must be 1..16384", p.QPs)
	case p.TxDepth < 1 || p.TxDepth > 16384:
		return fmt.Errorf("-t %d: TX depth must be 1..16384", p.TxDepth)
	case p.RxDepth < 1 || p.RxDepth > 16384:
		return fmt.Errorf("-r %d: RX depth must be 1..16384", p.RxDepth)
	case p.CQMod < 1 || p.CQMod > 1024:
		return fmt.Errorf("-Q %d: CQ moderation must be 1..1024", p.CQMod)
	case p.PostList < 1 || p.PostList > p.TxDepth:
		return fmt.Errorf("-l %d: post list must be 1..TX depth (%d)", p.PostList, p.TxDepth)
	case p.Duration == 0 && p.Iters%uint64(p.PostList) != 0:
		return fmt.Errorf("-n %d must be a multiple of -l %d", p.Iters, p.PostList)
	case p.Inline < InlineDeviceDefault || p.Inline > 1024:
		return fmt.Errorf("-I %d: inline size must be 0..1024", p.Inline)
	case p.UserGID && (p.GIDIndex < 0 || p.GIDIndex > 255):
		return fmt.Errorf("-x %d: GID index must be 0..255", p.GIDIndex)
	case p.Duration < 0:
		return errors.New("-D must be positive")
	case p.Duration > 0 && p.AllSizes:
		return errors.New("-D and -a cannot be combined (as in perftest)")
	case !p.Server && p.Host == "":
		return errors.New("client needs the server's address")
	case p.Test == TestLat && p.QPs != 1:
		return errors.New("latency tests use one QP (-q 1)")
	case p.Test == TestLat && p.Bidir:
		return errors.New("-b applies to bandwidth tests only")
	case p.Unsorted && p.Test != TestLat:
		return errors.New("-U applies to latency tests (--lat) only")
	case p.RDMACM && p.Conn != RC:
		return fmt.Errorf("-R works with -c RC only (perftest refuses UC; UD over RDMA CM is not implemented)")
	case p.Unsorted && p.Duration > 0:
		return errors.New("-U needs iteration mode (-n): -D keeps a histogram, not each sample")
	}
	if err := p.validateMcast(); err != nil {
		return err
	}
	if err := p.validateReport(); err != nil {
		return err
	}
	if err := p.validateWarmUp(); err != nil {
		return err
	}
	if err := p.validateDataValidation(); err != nil {
		return err
	}
	if err := p.validateCPUUtil(); err != nil {
		return err
	}
	if err := p.validateLatencyGap(); err != nil {
		return err
	}
	if err := p.validateRateLimit(); err != nil {
		return err
	}
	if _, _, err := p.swGap(p.maxSize()); err != nil {
		return err // the largest size has the fewest bursts a second
	}
	switch {
	case p.CQEPoll < 0 || p.CQEPoll > 65535:
		return fmt.Errorf("--cqe_poll %d: 1..65535 completions per poll (as perftest)", p.CQEPoll)
	case p.CQEPoll > 0 && p.Test != TestBW:
		return errors.New("--cqe_poll: latency loops poll one completion at a time")
	case p.CompVector < 0 || p.CompVector > 2048:
		return fmt.Errorf("-X %d: completion vector must be 0..2048 (as perftest)", p.CompVector)
	case p.CompVector > 0 && !p.UseEvent:
		return errors.New("-X needs -e: the vector is where completion events go (as perftest)")
	case p.SendImm && p.Verb != VerbSend:
		return errors.New("--send_with_imm applies to send tests only (as perftest)")
	case p.WriteImm && p.Verb != VerbWrite:
		return errors.New("--write_with_imm applies to write tests only (as perftest)")
	case len(p.Payload) > 0 && p.MmapFile != "":
		return errors.New("--payload_file_path with --mmap: the mapped file's pages are the payload, and rdmactl does not write into the file")
	case len(p.Payload) > 0 && p.UseSRQ:
		return errors.New("--payload_file_path with --use-srq: an rdmactl SRQ receiver checks its own byte pattern")
	case len(p.Payload) > 0 && p.Verb == VerbAtomic:
		return errors.New("--payload_file_path: atomics operate on 8-byte words whose results rdmactl checks from a zeroed target")
	case p.DLID < 0 || p.DLID > 0xffff:
		return fmt.Errorf("--dlid %d: a LID is 16 bits, 1..65535 (0: the peer's own)", p.DLID)
	case p.RecvPostList < 0 || p.RecvPostList > 1<<16:
		return fmt.Errorf("--recv_post_list %d: 1..65536 receives a post", p.RecvPostList)
	case p.RecvPostList > 1 && p.Test != TestBW:
		return errors.New("--recv_post_list: receive post lists are for bandwidth tests only (as perftest)")
	case p.RecvPostList > 1 && p.Duration == 0 && !p.RunInfinitely && p.Iters%uint64(p.RecvPostList) != 0:
		return fmt.Errorf("--recv_post_list %d: -n %d is not a multiple of it; the last list would never be posted (as perftest)", p.RecvPostList, p.Iters)
	case p.RecvPostList > 1 && p.recvComp() && uint64(p.RecvPostList) > p.rxPerQP():
		return fmt.Errorf("--recv_post_list %d is more than the %d receives a QP holds (-r); no list would fit", p.RecvPostList, p.rxPerQP())
	case p.IPv6Addr && p.cmExchange():
		return errors.New("--ipv6-addr: with -R or -z the RDMA CM resolves the address given; give an IPv6 one")
	case p.IPv6 && p.UserGID:
		return errors.New("--ipv6 steers the automatic GID choice; -x names the GID itself")
	case p.IPv6 && p.RDMACM:
		return errors.New("--ipv6: with -R the RDMA CM's route decides the GID; give the server's IPv6 address")
	}
	return p.validateEvents()
}

// exchangeNet is the network of the TCP exchange.
func (p *Params) exchangeNet() string {
	if p.IPv6Addr {
		return "tcp6"
	}
	return "tcp"
}

// sizes returns the message sizes of the run: 2..8 MiB with -a (UD: up to
// the MTU), else Size.
func (p *Params) sizes(mtu int) []uint64 {
	if !p.AllSizes {
		return []uint64{p.Size}
	}
	var s []uint64
	for sz := uint64(2); sz <= 1<<23; sz <<= 1 {
		if p.Conn == UD && sz > uint64(mtu) {
			break
		}
		s = append(s, sz)
	}
	return s
}

// maxSize is the largest message of the run (buffer sizing).
func (p *Params) maxSize() uint64 {
	if p.AllSizes {
		return 1 << 23
	}
	return p.Size
}

// paramRecordSize is the size of the record two rdmactl peers exchange
// after the MTU record (never sent to perftest): key=value text, NUL padded.
const paramRecordSize = 256

// relaxedOrdering says whether the memory is registered with PCIe relaxed
// ordering (verbs.AccessRelaxedOrder), as perftest 6.06 registers it
// unless --disable_pcie_relaxed, or in write_lat, whose receiver polls
// its memory for the last byte of a message and must see the bytes in
// order (src/write_lat.c). A device without the feature ignores it.
func (p *Params) relaxedOrdering() bool {
	return !p.NoRelaxedOrdering && !(p.Verb == VerbWrite && p.Test == TestLat && !p.WriteImm)
}

// exchangeMethod is the header's "Data ex. method" (perftest's
// exchange_state).
func (p *Params) exchangeMethod() string {
	if p.cmExchange() {
		return "rdma_cm"
	}
	return "Ethernet"
}

// cmExchange says whether the exchange runs over an RDMA CM connection
// (cm.go's comm link) instead of TCP: -R, and -z, as perftest's
// use_rdma_cm.
func (p *Params) cmExchange() bool { return p.RDMACM || p.CommCM }

// recvList is the number of receives posted in one call.
func (p *Params) recvList() int { return max(1, p.RecvPostList) }

// recvComp says whether each message completes on the receiver's receive
// queue as well as the sender's: send, and write with immediate data
// (perftest's has_recv_comp, src/perftest_parameters.h). Such receivers
// post receives and run send's loops.
func (p *Params) recvComp() bool { return p.Verb == VerbSend || p.WriteImm }

// passive says whether this side is the one perftest calls the server
// (its machine SERVER): the target of writes and reads, the receiver of
// sends, the side that waits for the other's report. It is the side that
// listens for the exchange unless --reversed, which swaps only these
// roles (perftest's parser, src/perftest_parameters.c: "fan-in"); the
// exchange's order stays with the TCP roles (Conn), as perftest's
// follows its servername.
func (p *Params) passive() bool { return p.Server != p.Reversed }

// symmetricText renders the SYMMETRIC options in a fixed order.
func (p *Params) symmetricText() string {
	dur := int64(p.Duration / time.Millisecond)
	iters := p.Iters
	if p.Duration > 0 {
		iters = 0
	}
	t := fmt.Sprintf("rdmactl1 verb=%s test=%s conn=%s size=%d all=%t iters=%d duration_ms=%d qps=%d bidir=%t post_list=%d gbits=%t",
		p.Verb, p.Test, p.Conn, p.Size, p.AllSizes, iters, dur, p.QPs, p.Bidir, p.PostList, p.Gbits)
	if p.Verb == VerbAtomic {
		t += " atomic=" + p.Atomic.String() // only here: older peers run no atomics
	}
	if p.Reversed {
		t += " reversed=true" // only here: older peers have no --reversed
	}
	if p.WriteImm {
		t += " write_imm=true" // only here: older peers have no --write_with_imm
	}
	if p.DataValidation {
		// Only here: older peers have no --data_validation. The ring's
		// geometry comes from -t, which must then agree (perftest's
		// help: "tx_depth must be same on both sides").
		t += fmt.Sprintf(" data_validation=true dv_tx_depth=%d", p.TxDepth)
	}
	if len(p.Payload) > 0 {
		t += " payload=file" // not compared: it tells an SRQ receiver what not to check
	}
	return t + p.eventsSymmetricText()
}

func encodeParams(p *Params) []byte {
	b := make([]byte, paramRecordSize)
	copy(b[:paramRecordSize-1], p.symmetricText())
	return b
}

// checkPeerParams compares the peer's parameter record with ours and names
// the first option that differs.
func checkPeerParams(p *Params, b []byte) error {
	if len(b) != paramRecordSize {
		return fmt.Errorf("parameter record is %d bytes, want %d", len(b), paramRecordSize)
	}
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		return errors.New("parameter record has no NUL terminator")
	}
	theirs := strings.Fields(string(b[:n]))
	mine := strings.Fields(p.symmetricText())
	if len(theirs) == 0 || theirs[0] != mine[0] {
		return fmt.Errorf("peer's parameter record is not understood (%.20q); run the same rdmactl version on both sides", string(b[:n]))
	}
	tm := map[string]string{}
	for _, f := range theirs[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("peer's parameter record has a malformed field %.20q", f)
		}
		tm[k] = v
	}
	flag := map[string]string{"verb": "test verb", "test": "bw/--lat", "conn": "-c", "size": "-s", "all": "-a",
		"iters": "-n", "duration_ms": "-D", "qps": "-q", "bidir": "-b", "post_list": "-l", "gbits": "--report_gbits", "atomic": "-A",
		"run_infinitely": "--run_infinitely", "reversed": "--reversed", "write_imm": "--write_with_imm",
		"data_validation": "--data_validation", "dv_tx_depth": "-t, which sizes --data_validation's ring"}
	// Fields sent only when set: absent means false, on either side.
	optional := map[string]bool{"reversed": true, "write_imm": true, "data_validation": true, "dv_tx_depth": true}
	mm := map[string]string{}
	keys := []string{}
	for _, f := range mine[1:] {
		k, v, _ := strings.Cut(f, "=")
		if k == "payload" { // information for the peer, not a parameter to agree on
			continue
		}
		mm[k] = v
		keys = append(keys, k)
	}
	for _, f := range theirs[1:] {
		if k, _, _ := strings.Cut(f, "="); optional[k] && mm[k] == "" {
			mm[k] = "false"
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		v := mm[k]
		tv, ok := tm[k]
		if !ok && optional[k] {
			tv, ok = "false", true
		}
		if !ok {
			return fmt.Errorf("peer's parameter record lacks %s; run the same rdmactl version on both sides", k)
		}
		if tv != v {
			return fmt.Errorf("parameters differ from the peer's: %s (%s) is %s here but %s there; use the same options on both sides", k, flag[k], v, tv)
		}
	}
	return nil
}

// ParseSize parses -s with perftest's K/M suffixes (and G).
func ParseSize(s string) (uint64, error) {
	mult := uint64(1)
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty size")
	}
	switch t[len(t)-1] {
	case 'k', 'K':
		mult, t = 1<<10, t[:len(t)-1]
	case 'm', 'M':
		mult, t = 1<<20, t[:len(t)-1]
	case 'g', 'G':
		mult, t = 1<<30, t[:len(t)-1]
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil || v == 0 || v > maxMsgSize/mult {
		return 0, fmt.Errorf("bad size %q: want a number of bytes 1..1G, with an optional K, M or G suffix", s)
	}
	return v * mult, nil
}

// ucMaxRx is perftest's UC_MAX_RX (src/perftest_parameters.h): the
// receive depth a UD or UC receiver takes in place of the default, so
// that every datagram of a short run finds a receive posted.
const ucMaxRx = 16000

// fitDepthsToIters caps the queue depths at the run's iterations as
// perftest's force_dependecies does (src/perftest_parameters.c): in
// iteration mode no queue is deeper than the run, and a UD or UC
// receiver at the default depth (512; perftest cannot tell it from -r
// 512) posts one receive per iteration (up to ucMaxRx). A send receiver's depth is then made even, perftest's
// workaround for an odd depth in its receive refill. Both sides report
// these depths in their headers and --out_json files.
func (p *Params) fitDepthsToIters() {
	if p.Duration == 0 && !p.RunInfinitely {
		iters := int(min(p.Iters, 1<<30))
		p.TxDepth = min(p.TxDepth, iters)
		if p.recvComp() {
			p.RxDepth = min(p.RxDepth, iters)
			if (p.Conn == UD || p.Conn == UC) && p.RxDepth == 512 {
				p.RxDepth = min(iters, ucMaxRx)
			}
		}
	}
	if p.recvComp() && p.RxDepth%2 == 1 && !p.AllSizes && !p.RunInfinitely {
		p.RxDepth++
	}
}
