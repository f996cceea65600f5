package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Session runs one benchmark, one side, with perftest's exchange sequence
// for the test (perftest v4.5-0.17 src/*_bw.c, *_lat.c): the peer may be
// perftest (exchange >= 5.70, including 6.06 and >= 6.28, which skip their
// negotiation struct because we claim 6.27) or rdmactl (which also compares
// the symmetric options up front).
type Session struct {
	P   *Params
	Dev Device
	Out io.Writer // perftest-style text; nil in JSON mode
	// Notes gets warnings for stderr: perftest's under its name
	// (P.Report.AsPerftest), rdmactl's own otherwise; nil: none.
	Notes    io.Writer
	Progress io.Writer // live progress line (a terminal); nil: none
	// Listener is an already bound server socket (tests); nil: Listen.
	Listener    net.Listener
	StepTimeout time.Duration // per exchange; 0: 10 s
	DialTimeout time.Duration // client connect retries; 0: 5 s
	Stall       time.Duration // data path without progress; 0: 10 s
	// SoleSession says that nothing else in the process runs a loop
	// meanwhile, so Run may take the Go runtime down to one P (two
	// sessions in one process, as in tests, need two Ps to progress) and,
	// in the detached mode, run latency loops on an rtloop.Thread.
	SoleSession bool
	// CMDevice maps the route of an RDMA CM id to its verbs device (-R
	// only; Dev is then opened on it, cm_session.go).
	CMDevice func(rdmacm.Route) (verbs.Device, error)
	// Counters reads the port's counters for --counters (P.CounterDeltas);
	// nil: none are reported.
	Counters CounterWatch
	// SysfsIB is where -W's counter files are; "": /sys/class/infiniband.
	SysfsIB string

	cfiles   *counterFiles // -W
	fig      io.Writer     // --output: where the one figure goes (Out is nil then)
	conn     *Conn
	port     PortAttr
	mtu      int
	withGID  bool
	gidIndex int
	cycle    int32
	my, rem  []Dest
	res      *Resources
	ahs      []*verbs.AH
	qpsUp    bool        // connectQPs ran: later key rounds are handshakes
	settled  bool        // settle ran since the last loop
	thr      *loopThread // the runners' loop thread (teardown stops it)
	stop     atomic.Bool
	peerGone atomic.Bool
	peerDone atomic.Bool // the peer ended its duration run (watchPeer)
	// peerPayload: the rdmactl peer sends a --payload_file_path payload,
	// not the pattern an SRQ receiver checks.
	peerPayload bool
	// portWatch reads the device's async events (portwatch.go); nil:
	// the device cannot report them.
	portWatch *portWatch
	result    Result
	cm        *cmLink // -R: the comm connection and the data QPs' ids
	// dv is --data_validation's buffer layout, val the validators of a
	// side that checks (validation.go); nil otherwise.
	dv     *dvLayout
	val    *validation
	cmNote string // -R: why -d was not used
	// outJSONErr is the first failure to write --out_json's file.
	outJSONErr error
	// cpuStat reads /proc/stat's user and idle ticks for --cpu_util
	// (cpuutil.go); tests replace it.
	cpuStat func() (user, idle int64, err error)
	// Tests only (cm_vm_test.go): called with the run's memory and key
	// records once the QPs are up, before the first exchange of the test
	// sequence, and after it, before teardown.
	testBefore, testAfter func(res *Resources, my []Dest)
	// Tests only (session_test.go): called right before each loop, as a
	// side that starts its clock late.
	testBeforeLoop func()
}

// Run executes the benchmark and returns its result. On Ctrl-C (ctx
// cancelled) it returns what was measured so far with Interrupted set,
// together with ctx.Err().
func (s *Session) Run(ctx context.Context) (*Result, error) {
	p := s.P
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Report.AsPerftest && p.Test == TestBW && p.PostList > 1 && !p.UserCQMod {
		// perftest's parser says so (force_dependecies,
		// src/perftest_parameters.c); Defaults did it.
		s.printf("%sPost List requested - CQ moderation will be the size of the post list\n", resultLine)
	}
	if p.Report.CPUUtil && p.Duration == 0 {
		// perftest's parser prints a separator and a warning, and its
		// report has no CPU column (src/perftest_parameters.c).
		p.Report.CPUUtil = false
		if p.Report.AsPerftest {
			s.printf("%s", resultLine)
			s.note(" CPU Utilization works only with Duration mode.")
		} else {
			s.note("rdmactl: perf: --cpu_util works only with -D: the report has no CPU_Util column (as perftest)")
		}
	}
	if p.Report.Output != OutputFull {
		// perftest prints only the figure lines then (FULL_VERBOSITY
		// gates the rest).
		s.fig, s.Out = s.Out, nil
		defer func() { s.Out, s.fig = s.fig, nil }()
	}
	// The loop mode, once per process, before any clock reading.
	rtloop.Select(p.Loop)
	if s.StepTimeout == 0 {
		s.StepTimeout = 10 * time.Second
	}
	if s.DialTimeout == 0 {
		s.DialTimeout = 5 * time.Second
	}
	if s.SoleSession {
		// One P for the whole session. With more, the runtime's
		// preemption of the (never blocking) loop every 10 ms wakes an
		// idle P's thread, which takes the loop over while the old thread
		// sleeps: a futex hand-off that costs milliseconds when the CPUs
		// are busy (the peer spins too), each a latency outlier. With one
		// P a preempted or yielding (yielder) loop resumes on its own
		// thread; the watcher, the progress ticker and Ctrl-C need no
		// parallelism and run when the loop yields. Set here, not around
		// each loop: GOMAXPROCS stops the world, which after the start
		// barrier delayed a receiver's first poll by milliseconds.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1 + p.validators()))
		// And the runtime's monitor thread stops preempting the loop
		// (detached mode only). Best effort: without it, the tail is
		// longer, and nothing else changes.
		_ = rtloop.IdleSysmon()
	}
	if s.Stall == 0 {
		s.Stall = 10 * time.Second
	}
	if p.Connectionless {
		// A listener waits for senders as long as it runs, as perftest's.
		s.Stall = 100 * 365 * 24 * time.Hour
	}
	role := "client"
	if p.passive() {
		role = "server"
	}
	s.result = Result{Test: p.Verb.String() + "_" + p.Test.String(), Role: role, Conn: p.Conn.String(), QPs: p.QPs, Source: "local"}
	if p.Test == TestBW {
		s.result.Unit = "MiB/s"
		if p.Gbits {
			s.result.Unit = "Gb/s"
		}
	}
	defer s.teardown()

	var err error
	if p.RDMACM {
		// The CM's route decides the device, so it comes first.
		if err := s.connectCM(ctx); err != nil {
			return nil, err
		}
		if s.cmNote != "" {
			s.printf(" %s\n", s.cmNote)
		}
	}
	// Watch first, then check: a port that goes down after the check
	// raises an event the watcher reads (portwatch.go).
	s.watchPort()
	if s.port, err = s.Dev.Port(); err != nil {
		return nil, err
	}
	if err := s.forceLink(); err != nil {
		return nil, err
	}
	if err := s.checkMcastLink(); err != nil {
		return nil, err
	}
	if p.Report.AsPerftest {
		if note := p.ResolveInlineAsPerftest(s.port); note != "" {
			s.printf("%s", resultLine)
			s.note(note)
		}
	} else {
		p.ResolveInline(s.port)
	}
	if err := s.checkPKeyIndex(); err != nil {
		return nil, err
	}
	if err := s.chooseGID(); err != nil {
		return nil, err
	}
	if err := s.openCounters(); err != nil {
		return nil, err
	}
	switch {
	case p.RDMACM: // connectCM above
	case p.Connectionless: // no peer (mcast.go)
	case p.CommCM:
		if err := s.connectComm(ctx); err != nil {
			return nil, err
		}
	default:
		if err := s.connect(ctx); err != nil {
			return nil, err
		}
	}
	stopWatch := context.AfterFunc(ctx, func() { s.stop.Store(true) })
	defer stopWatch()

	if p.Connectionless {
		s.listenOnly()
		err = s.fitUD()
	} else {
		err = s.prefix()
	}
	if err != nil {
		return nil, err
	}
	if err := s.setup(); err != nil {
		return nil, err
	}
	if err := s.joinMcast(); err != nil {
		return nil, err
	}
	if p.RDMACM {
		if err := s.connectDataCM(ctx); err != nil {
			return nil, err
		}
	}
	if s.testBefore != nil {
		s.testBefore(s.res, s.my)
	}
	s.startCounters()
	err = s.sequence(ctx)
	s.finishCounters()
	if s.testAfter != nil && err == nil {
		s.testAfter(s.res, s.my)
	}
	if err != nil && ctx.Err() != nil {
		s.result.Interrupted = true
		return &s.result, ctx.Err()
	}
	if err != nil {
		// A port that went down explains whatever failed after it.
		if perr := s.portDownErr(portSettle); perr != nil {
			err = perr
		}
		return &s.result, err
	}
	// A port that went down after the last loop, before the report: the
	// run did not finish as it should have either.
	if perr := s.portDownErr(0); perr != nil {
		return &s.result, perr
	}
	if p.WaitDestroy > 0 {
		if err := s.waitDestroy(ctx); err != nil {
			return &s.result, err
		}
	}
	// The thresholds judge a finished run only (limits.go).
	checks, err := checkLimits(&p.Limits, &s.result)
	s.result.Limits = checks
	return &s.result, err
}

func (s *Session) teardown() {
	// First: the loop thread's copy of the file table holds the
	// connection and the device open.
	s.thr.Stop()
	// Then the validators, which read the memory Close unmaps.
	s.val.halt()
	s.stopPortWatch()
	s.cfiles.close()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	if s.Dev != nil {
		_ = s.Dev.Close()
	}
}

// forceLink applies --force-link as perftest's set_link_layer
// (src/perftest_parameters.c): the run takes the forced link layer as
// the port's, so Ethernet means a GRH and a GID (on InfiniBand too,
// where a GRH is allowed), IB none. A RoCE port cannot carry a QP
// without a GRH (perftest's run fails at the QP's move to RTR): refused
// before anything is set up.
func (s *Session) forceLink() error {
	f := s.P.ForceLink
	if f == 0 || f == s.port.LinkLayer {
		return nil
	}
	if s.port.LinkLayer == vocab.LinkLayerEthernet {
		return fmt.Errorf("--force-link IB: %s is Ethernet (RoCE), where every packet needs the GRH that InfiniBand addressing leaves out; run without --force-link: %w",
			s.P.portName(), verbs.ErrUnsupported)
	}
	s.port.LinkLayer = f
	return nil
}

// chooseGID decides the key-record form and GID as perftest: a GID iff
// the link layer is Ethernet or -x was given; -x picks it, else the best
// scored one.
func (s *Session) chooseGID() error {
	p := s.P
	s.gidIndex = -1
	s.withGID = s.port.LinkLayer == vocab.LinkLayerEthernet || p.UserGID
	if !s.withGID {
		return nil
	}
	if p.UserGID {
		for _, g := range s.port.GIDs {
			if g.Index == p.GIDIndex {
				s.gidIndex = p.GIDIndex
				return nil
			}
		}
		return fmt.Errorf("-x %d: no such GID on %s port %d (see 'rdmactl gids')", p.GIDIndex, p.Device, p.IBPort)
	}
	s.gidIndex = BestGID(s.port.GIDs, p.IPv6)
	if s.gidIndex < 0 {
		return fmt.Errorf("%s port %d has no usable GID (is the netdev up with an address?)", p.Device, p.IBPort)
	}
	return nil
}

func (s *Session) gid() [16]byte {
	for _, g := range s.port.GIDs {
		if g.Index == s.gidIndex {
			return g.GID
		}
	}
	return [16]byte{}
}

func (s *Session) connect(ctx context.Context) error {
	p := s.P
	var err error
	if s.Out != nil && p.passive() {
		// perftest's banner is its (benchmark) server's, before the
		// exchange's connection: with --reversed, the side that dials.
		fmt.Fprint(s.Out, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	}
	if !p.Server {
		s.conn, err = dialNet(ctx, p.exchangeNet(), p.Host, p.Port, s.DialTimeout, s.StepTimeout)
		return err
	}
	l := s.Listener
	if l == nil {
		if l, err = listenNet(p.exchangeNet(), p.Bind, p.Port); err != nil {
			return err
		}
	}
	s.conn, err = Accept(ctx, l, s.StepTimeout)
	_ = l.Close() // one client per run, as perftest
	return err
}

// prefix is the exchange before the key records: version, cycle buffer,
// cache line, MTU (and the parameter record between rdmactl peers).
func (s *Session) prefix() error {
	c := s.conn
	b, err := c.xchg("version", encodeVersion(OurVersion), versionSize, false)
	if err != nil {
		return err
	}
	if c.peerVer, err = parseVersion(b); err != nil {
		return &PeerError{Err: err}
	}
	// perftest 6.29's options, which an older perftest does not have
	// (--data_validation: its key record would lack the tail markers).
	for _, o := range [...]struct {
		on   bool
		flag string
	}{{s.P.WriteImm, "--write_with_imm"}, {s.P.DataValidation, "--data_validation"}} {
		if o.on && !c.peerVer.Rdmactl && c.peerVer.Number < perftest629 {
			return &PeerError{Err: fmt.Errorf("%s: the peer is perftest %s, which has no %s (perftest 6.29 has); run rdmactl or perftest 6.29 on the other side", o.flag, c.peerVer.Text, o.flag)}
		}
	}
	page := int32(os.Getpagesize())
	if b, err = c.xchg("cycle buffer", encodeInt32(page), 4, false); err != nil {
		return err
	}
	rc, err := parseSysValue("cycle buffer", b, 256, 1<<24)
	if err != nil {
		return &PeerError{Err: err}
	}
	s.cycle = max(page, rc)
	if b, err = c.xchg("cache line size", encodeInt32(64), 4, false); err != nil {
		return err
	}
	if _, err := parseSysValue("cache line size", b, 8, 4096); err != nil {
		return &PeerError{Err: err}
	}
	mine := s.ownMTU()
	if b, err = c.xchg("MTU", encodeMTU(mine), mtuSize, false); err != nil {
		return err
	}
	theirs, err := parseMTU(b)
	if err != nil {
		return &PeerError{Err: err}
	}
	s.mtu = min(mine, theirs)
	if c.peerVer.Rdmactl {
		if b, err = c.xchg("parameters", encodeParams(s.P), paramRecordSize, false); err != nil {
			return err
		}
		if err := checkPeerParams(s.P, b); err != nil {
			return &PeerError{Err: err}
		}
		s.peerPayload = bytes.Contains(b, []byte(" payload="))
	}
	return s.fitUD()
}

// ownMTU is this side's MTU before the exchange: the port's active MTU,
// or -m if smaller, with perftest's set_mtu warnings (an -m that is no
// RDMA MTU runs at the port's).
func (s *Session) ownMTU() int {
	mine := s.port.ActiveMTU
	if s.P.MTU != 0 && !validMTU(s.P.MTU) {
		// perftest's set_mtu warns and runs at the port's active MTU
		// (printed as its enum ibv_mtu), as for no -m.
		if s.P.Report.AsPerftest {
			s.note(fmt.Sprintf(" Invalid MTU - %d \n Please choose mtu from {256,512,1024,2048,4096}\n Will run with the port active mtu - %d", s.P.MTU, bits.Len(uint(mine))-8))
		} else {
			s.note(fmt.Sprintf("rdmactl: perf: -m %d is no RDMA MTU (256, 512, 1024, 2048, 4096): running at %s's active MTU, %d (as perftest)", s.P.MTU, s.P.portName(), mine))
		}
		s.P.MTU = 0
	}
	if s.P.Report.AsPerftest && s.P.MTU > mine && mine >= 256 {
		// perftest's set_mtu (src/perftest_parameters.c), called as its
		// MTU step begins (check_mtu, src/perftest_communication.c),
		// says so on stdout, the MTU as its enum ibv_mtu (1024: 3).
		s.printf("Requested mtu is higher than active mtu \nChanging to active mtu - %d\n", bits.Len(uint(mine))-8)
	}
	if s.P.MTU != 0 && s.P.MTU < mine {
		mine = s.P.MTU
	}
	if !validMTU(mine) {
		mine = 1024
	}
	return mine
}

// fitUD makes a UD run's message size fit one packet of the path MTU.
func (s *Session) fitUD() error {
	if s.P.Conn == UD && s.P.maxSize() > uint64(s.mtu) {
		// A UD message fits one packet. After the MTU exchange perftest
		// refuses a larger -s, and makes its default size (or -a's
		// largest) the MTU, saying so (src/perftest_communication.c
		// check_mtu).
		if s.P.UserSize && !s.P.AllSizes {
			return fmt.Errorf("-s %d: a UD message cannot be larger than the path MTU (%d bytes), as perftest says", s.P.Size, s.mtu)
		}
		if s.P.Report.AsPerftest {
			s.note(fmt.Sprintf(" Max msg size in UD is MTU %d\n Changing to this MTU", s.mtu))
		} else if !s.P.AllSizes {
			s.note(fmt.Sprintf("rdmactl: perf: UD messages are at most the path MTU: %d bytes instead of %d (as perftest)", s.mtu, s.P.Size))
		}
		if !s.P.AllSizes {
			s.P.Size = uint64(s.mtu)
		}
	}
	return nil
}

// setup creates the resources and this side's key records.
func (s *Session) setup() error {
	p := s.P
	size := bufSize(p, uint64(s.cycle))
	sendWR, cqe := p.TxDepth, max(p.TxDepth, p.RxDepth)*p.QPs
	var dv *dvLayout
	if p.DataValidation {
		// perftest's layout, and room for the fetch-and-adds between
		// the writes (tx_buffer_depth, src/perftest_resources.c).
		l, err := newDVLayout(p)
		if err != nil {
			return err
		}
		dv, size = &l, l.total
		sendWR, cqe = 3*p.TxDepth, max(3*p.TxDepth, p.RxDepth)*p.QPs
		if p.DataValidationDebug {
			s.printPlain(dvDebugParams(dv, p.TxDepth))
		}
	}
	qt := map[Transport]verbs.QPType{RC: verbs.QPTypeRC, UC: verbs.QPTypeUC, UD: verbs.QPTypeUD}[p.Conn]
	outReads := 1
	if p.Verb.isReadLike() || p.DataValidation { // perftest's ctx_set_out_reads
		outReads = max(1, s.port.MaxOutRead)
		if p.OutReads > 0 && p.OutReads < outReads {
			outReads = p.OutReads
		}
	}
	recvWR := 1
	if p.recvComp() {
		recvWR = p.RxDepth
	}
	var err error
	s.res, err = s.Dev.Setup(SetupConfig{
		BufSize: int(size), Type: qt, NumQPs: p.QPs, SendWR: sendWR, RecvWR: recvWR,
		CQE: cqe, Inline: p.Inline, OutReads: outReads,
		Atomic: p.Verb == VerbAtomic || p.DataValidation, SRQ: p.srqSide(),
		Events:          p.UseEvent,
		CompVector:      p.CompVector,
		HugePages:       p.HugePages,
		RelaxedOrdering: p.relaxedOrdering(),
		MmapFile:        p.MmapFile,
		MmapOffset:      p.MmapOffset,
		OnNUMANode:      p.OnNUMANode,
		MRPerQP:         p.MRPerQP,
		NUMANode:        p.NUMANode,
		ODP:             p.ODP,
		PKeyIndex:       uint16(p.QoS.PKeyIndex),
	})
	if err != nil {
		return err
	}
	if p.MmapFile != "" && p.Report.AsPerftest {
		// perftest's pp_init_mmap says so on stdout, before its header,
		// with the size its alloc_ctx computes.
		s.printf("allocated mmap buffer of size %d at %#x\n", perftestBufSize(p, uint64(s.cycle)), s.res.Addr)
	}
	blk := blockSize(p, uint64(s.cycle))
	p.fillPayload(s.res.Buf, blk)
	gid := s.gid()
	s.my = make([]Dest, p.QPs)
	s.rem = make([]Dest, p.QPs)
	for i := range s.my {
		s.my[i] = Dest{LID: s.port.LID, OutReads: uint16(outReads), QPN: s.res.QPs[i].QPN, PSN: rand.Uint32() & 0xffffff,
			RKey: s.res.rkey(i), VAddr: s.res.Addr + uint64(p.QPs+i)*blk, GID: gid}
		if dv != nil {
			s.my[i].VAddr, s.my[i].TailMarkers = s.res.Addr+dv.targetOff(i), s.res.Addr+dv.markers
		}
	}
	if dv != nil {
		s.dv = dv
		dv.fill(s.res.Buf)
		if p.DataValidationDebug {
			s.printPlain(dvDebugBuffer(dv))
		}
		if p.validates() {
			s.val = newValidation(*dv, s.res.Buf, runtime.NumCPU())
		}
	}
	return nil
}

// key does one key-record round for QP i; long waits may span the peer's
// run. perftest sends the same record before connecting (the QP's
// address) and after (as a handshake), so errors name the round's role:
// "key record" alone means little to a user whose peer just died.
func (s *Session) key(i int, long bool) error {
	what := "the key record (QP address)"
	switch {
	case long:
		what = "the end-of-run handshake"
	case s.qpsUp:
		what = "the start handshake"
		s.settle()
	}
	form := keyForm{gid: s.withGID, dv: s.P.DataValidation}
	mine, parse := encodeKey(&s.my[i], form), func(b []byte) (Dest, error) { return parseKey(b, form) }
	if s.P.cmExchange() {
		mine, parse = encodeKeyCM(&s.my[i], s.gidIndex, s.cmTailKey()), parseKeyCM
	}
	// The peer's record has this side's form, so this side's size.
	b, err := s.conn.xchg(what, mine, len(mine), long)
	if err != nil {
		return err
	}
	d, err := parse(b)
	if err != nil {
		return &PeerError{Err: err}
	}
	if s.P.DLID != 0 {
		d.LID = uint16(s.P.DLID)
	}
	s.rem[i] = d
	return nil
}

func (s *Session) keys() error {
	for i := range s.my {
		if err := s.key(i, false); err != nil {
			return err
		}
	}
	return nil
}

// handshake is one key record on the first QP, which perftest's tests
// exchange as a barrier between the steps of their set-up.
func (s *Session) handshake() error { return s.key(0, false) }

// start runs a test's set-up steps (keys, connectQPs, handshake) in the
// order its perftest program does them in main() (src/write_bw.c,
// send_bw.c, write_lat.c, send_lat.c...), then the header.
func (s *Session) start(steps ...func() error) error {
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	s.header()
	return nil
}

// connectQPs checks GID families (ctx_check_gid_compatibility) and moves
// the QPs to RTS.
func (s *Session) connectQPs() error {
	if s.P.RDMACM {
		s.qpsUp = true // the CM moved them to RTS (perftest skips the GID check too)
		if s.P.QoS.given() {
			return s.queryQoS() // what -T, -u, --retry_count made of the QPs
		}
		return nil
	}
	if s.withGID && isIPv4Mapped(s.my[0].GID) != isIPv4Mapped(s.rem[0].GID) {
		return &PeerError{Err: errors.New("GID types differ: one side uses an IPv4-mapped GID and the other does not; pick matching GIDs with -x")}
	}
	var staticRate uint8
	if rl := &s.P.RateLimit; rl.Type == RateLimitHW {
		if s.port.LinkLayer == vocab.LinkLayerEthernet {
			note, err := s.P.hwOnEthernet()
			if note != "" {
				s.note(note)
			}
			if err != nil {
				return err
			}
		} else {
			staticRate = rl.HWRate
		}
	}
	s.qpsUp = true
	for i := range s.my {
		q := &s.P.QoS
		cfg := ConnectConfig{MTU: s.mtu, GIDIndex: s.gidIndex, Local: s.my[i], Remote: s.rem[i], QKey: udQKey,
			Timeout: q.QPTimeout(), TrafficClass: q.TrafficClass(), FlowLabel: q.FlowLabel(i), SL: q.SL, RetryCnt: q.RetryCount(), RetrySet: true,
			StaticRate: staticRate}
		if err := s.Dev.Connect(i, cfg); err != nil {
			return err
		}
		if s.P.Conn == UD {
			ah, err := s.Dev.CreateAH(&s.rem[i], cfg)
			if err != nil {
				return err
			}
			s.ahs = append(s.ahs, ah)
		}
	}
	return s.queryQoS()
}

// bwReport exchanges the five report fields; use says whether we use the
// peer's figures (perftest's unidirectional write/read server sends an
// uninitialised struct, which we must not judge).
func (s *Session) bwReport(mine BWResult, use bool) (BWReport, error) {
	var f [5][]byte
	out := [5][]byte{encodeU64(mine.Size), encodeU64(mine.Iters), encodeF64(mine.BWPeak), encodeF64(mine.BWAvg), encodeF64(mine.MsgRate)}
	names := [5]string{"report size", "report iterations", "report peak", "report average", "report message rate"}
	for i := range out {
		b, err := s.conn.xchg(names[i], out[i], 8, i == 0 && s.P.passive() && !s.P.Bidir)
		if err != nil {
			return BWReport{}, err
		}
		f[i] = b
	}
	if !use {
		return BWReport{}, nil
	}
	r, err := parseBWReport(f)
	if err != nil {
		return r, &PeerError{Err: err}
	}
	return r, nil
}

// newRunner builds the runner for this session's loops.
func (s *Session) newRunner() *runner {
	r := newRunner(s.P, s.res, s.rem, s.ahs, uint64(s.cycle), &s.stop)
	r.stall, r.stallBase = s.Stall, s.Stall
	if s.dv != nil {
		r.dv = newDVLoop(*s.dv, s.res.Addr, s.rem)
	}
	if s.SoleSession && rtloop.Selected() == rtloop.Detached {
		// Only then: the thread's table holds every file open when it
		// starts, which a second session's peer would wait on to close.
		if s.thr == nil {
			s.thr = rtloop.NewThread[latArgs, latResult]()
		}
		r.thr = s.thr
	}
	return r
}

// sumBidir exchanges BW reports after a bidirectional run and adds the
// peer's figures to ours.
func (s *Session) sumBidir(res BWResult) (BWResult, error) {
	rep, err := s.bwReport(res, true)
	if err != nil {
		return res, err
	}
	if rep.Size != res.Size {
		return res, peerErrorf("the peer ran %d-byte messages and we ran %d; use the same -s on both sides", rep.Size, res.Size)
	}
	if s.P.Report.Both {
		s.result.ReportBoth = &ReportBoth{Local: res, Remote: BWResult{Size: rep.Size, Iters: rep.Iters, BWPeak: rep.BWPeak, BWAvg: rep.BWAvg, MsgRate: rep.MsgRate}}
	}
	res.BWPeak += rep.BWPeak
	res.BWAvg += rep.BWAvg
	res.MsgRate += rep.MsgRate
	return res, nil
}

func (s *Session) closeConn() error {
	if err := s.key(0, true); err != nil {
		return err
	}
	s.conn.sayDone()
	return nil
}

func (s *Session) info() *Info {
	in := &Info{Device: s.P.Device, Port: s.P.IBPort, LinkType: s.port.LinkLayer.String(), GIDIndex: s.gidIndex, MTU: s.mtu,
		Local: s.my, Remote: s.rem, WithGID: s.withGID,
		TxDepth: s.P.TxDepth, RxDepth: s.P.RxDepth, CQMod: s.P.CQMod, PostList: s.P.PostList, Inline: s.P.Inline,
		RDMACM: s.P.RDMACM}
	if s.conn != nil {
		in.Peer, in.PeerVer = s.conn.RemoteAddr(), s.conn.peerVer.Text
	} else {
		in.Remote = nil // --connectionless: no peer
	}
	if len(s.my) > 0 && s.P.Verb.isReadLike() {
		in.OutReads = int(s.my[0].OutReads)
	}
	if s.P.Mcast && len(s.my) > 0 {
		g := s.my[0].GID // the group this side joined
		if !s.P.joinsGroup() {
			g = s.rem[0].GID // the server's group, which this side sends to
		}
		in.MGID = netip.AddrFrom16(g).String()
	}
	return in
}

func (s *Session) printf(format string, a ...any) {
	if s.Out != nil {
		fmt.Fprintf(s.Out, format, a...)
	}
}

// printPlain prints text that perftest prints whatever --output says
// (plain printf, not gated by FULL_VERBOSITY): to the report, or beside
// --output's figure; in JSON mode nowhere.
func (s *Session) printPlain(text string) {
	w := s.Out
	if w == nil {
		w = s.fig
	}
	if w != nil {
		fmt.Fprint(w, text)
	}
}

// sequence runs the test-specific exchange and measurement.
func (s *Session) sequence(ctx context.Context) error {
	p := s.P
	switch {
	case p.Connectionless:
		return s.seqListen(ctx)
	case p.Test == TestBW && !p.recvComp():
		return s.seqRDMABW(ctx)
	case p.Test == TestBW:
		return s.seqSendBW(ctx)
	default:
		return s.seqLat(ctx)
	}
}

// header records the run's set-up (Info) in the result and, with an
// output, prints perftest's header and the table's first lines.
func (s *Session) header() {
	in := s.info()
	s.result.Info = *in
	if s.Out == nil {
		return
	}
	writeHeader(s.Out, s.P, in)
	switch {
	case s.P.Test == TestBW:
		s.printf("%s", s.cpuHeaderEnd(bwHeader(s.P.Gbits, s.P.Report.AsPerftest)))
	case s.P.Verb.isReadLike() && s.P.passive() && s.P.Report.AsPerftest:
		// perftest's read_lat and atomic_lat servers (src/read_lat.c,
		// atomic_lat.c) print no table: their memory is read, they
		// measure nothing.
	default:
		s.printf("%s", s.cpuHeaderEnd(latHeader))
	}
}

func (s *Session) addBW(r BWResult) {
	s.result.BW = append(s.result.BW, r)
	s.printf("%s", s.cpuRowEnd(formatBWRow(r)))
	if s.fig != nil {
		fmt.Fprint(s.fig, s.P.Report.Output.bwFigure(r))
	}
	s.outJSONBW(r)
	s.reportCounterFiles()
}

// seqRDMABW is ib_write_bw / ib_read_bw.
func (s *Session) seqRDMABW(ctx context.Context) error {
	p := s.P
	if err := s.start(s.keys, s.connectQPs, s.keys, s.handshake); err != nil {
		return err
	}
	if p.passive() && !p.Bidir {
		// The server's memory is the target; it waits for the client's
		// report and prints it.
		if p.RunInfinitely {
			return s.waitInfiniteEnd()
		}
		s.val.start()
		if err := s.key(0, true); err != nil {
			return err
		}
		rep, err := s.bwReport(BWResult{}, true)
		if err != nil {
			return err
		}
		want := p.Size
		if p.AllSizes {
			want = 1 << 23
		}
		if rep.Size != want {
			return peerErrorf("the client ran %d-byte messages but this server was started with -s %d; use the same size (and -a) on both sides", rep.Size, want)
		}
		s.result.Source = "peer"
		s.addBW(BWResult{Size: rep.Size, Iters: rep.Iters, BWPeak: rep.BWPeak, BWAvg: rep.BWAvg, MsgRate: rep.MsgRate})
		s.printf("%s", resultLine)
		if err := s.closeThenCheckAtomic(nil, false, true); err != nil {
			return err
		}
		return s.validationReport()
	}
	r := s.newRunner()
	if err := s.peekAtomic(false); err != nil {
		return err
	}
	s.val.start()
	if p.Bidir && !p.AllSizes {
		if err := s.key(0, false); err != nil {
			return err
		}
	}
	var last BWResult
	for _, sz := range p.sizes(s.mtu) {
		if p.Bidir && p.AllSizes {
			if err := s.key(0, false); err != nil {
				return err
			}
		}
		r.prepare(sz)
		if p.WarmUp {
			if err := r.warmUp(r.stall); err != nil {
				return err
			}
		}
		if p.RunInfinitely {
			return s.runInfinitely(ctx, r, r.runBW)
		}
		res, err := s.measure(ctx, r, r.runBW)
		if err != nil {
			return err
		}
		if p.Bidir {
			if p.AllSizes || p.DataValidation {
				// -a: perftest's round between sizes. --data_validation:
				// perftest 6.29's "sync before stopping validation"
				// (src/write_bw.c, read_bw.c), here one round as well.
				if err := s.key(0, true); err != nil {
					return err
				}
			}
			if res, err = s.sumBidir(res); err != nil {
				return err
			}
		}
		s.addBW(res)
		s.printReportBoth()
		last = res
	}
	if err := s.peekAtomic(true); err != nil {
		return err
	}
	s.printf("%s", resultLine)
	if err := s.validationReport(); err != nil {
		return err
	}
	if !p.Bidir {
		if err := s.key(0, true); err != nil {
			return err
		}
		if _, err := s.bwReport(last, false); err != nil {
			return err
		}
	}
	return s.closeThenCheckAtomic(r, true, p.Bidir)
}

// seqSendBW is ib_send_bw.
func (s *Session) seqSendBW(ctx context.Context) error {
	p := s.P
	if err := s.start(s.keys, s.connectQPs, s.handshake, s.keys); err != nil {
		return err
	}
	r := s.newRunner()
	r.fillSRQPattern() // what an --use-srq receiver checks (srq.go)
	for i, sz := range p.sizes(s.mtu) {
		r.prepare(sz)
		if p.passive() || p.Bidir {
			limit := p.Iters
			if p.Duration > 0 {
				limit = 1 << 62
			}
			if err := r.postRecvs(limit); err != nil {
				return err
			}
		}
		if err := s.key(0, i > 0); err != nil {
			return err
		}
		if p.RunInfinitely {
			loop := r.runBW
			if p.passive() {
				loop = r.runBWRecv
			}
			return s.runInfinitely(ctx, r, loop)
		}
		var res BWResult
		var err error
		if p.passive() && !p.Bidir {
			res, err = s.measure(ctx, r, r.runBWRecv)
		} else {
			res, err = s.measure(ctx, r, r.runBW)
		}
		if err != nil {
			return err
		}
		if p.Bidir && p.Duration == 0 {
			// Each side measured its sending half; both print the sum
			// (perftest: xchg_bw_reports, then print_full_bw_report).
			if res, err = s.sumBidir(res); err != nil {
				return err
			}
		}
		s.addBW(res)
		s.printReportBoth()
		if p.AllSizes {
			if err := s.key(0, true); err != nil {
				return err
			}
		}
	}
	s.printf("%s", resultLine)
	if err := s.closeConn(); err != nil {
		return err
	}
	return s.checkSRQ(r)
}

// seqLat is ib_write_lat, ib_read_lat and ib_send_lat.
func (s *Session) seqLat(ctx context.Context) error {
	p := s.P
	steps := []func() error{s.handshake, s.keys, s.connectQPs, s.keys, s.handshake}
	if p.Verb == VerbSend {
		steps = []func() error{s.keys, s.connectQPs, s.handshake, s.keys}
	}
	if err := s.start(steps...); err != nil {
		return err
	}
	if p.Verb.isReadLike() && p.passive() {
		// The reader is the client; the server's memory is read.
		if !p.Report.AsPerftest { // perftest's read_lat/atomic_lat server prints no table (header)
			s.printf("%s", resultLine)
		}
		return s.closeThenCheckAtomic(nil, false, true)
	}
	r := s.newRunner()
	if err := s.peekAtomic(false); err != nil {
		return err
	}
	if p.Verb == VerbSend {
		r.fillSRQPattern() // what an --use-srq receiver checks (srq.go)
	}
	div := 2.0
	if p.Verb.isReadLike() {
		div = 1
	}
	for _, sz := range p.sizes(s.mtu) {
		r.prepare(sz)
		run := r.runLatWrite
		switch {
		case p.Verb.isReadLike():
			run = r.runLatRead // one at a time, post to post
		case p.recvComp():
			// With immediate data a write completes at the receiver
			// too; perftest's run_iter_lat_write_imm is its send loop.
			run = r.runLatSend
			if err := r.postRecvs(p.Iters); err != nil {
				return err
			}
			if err := s.key(0, false); err != nil {
				return err
			}
		}
		_, err := s.measure(ctx, r, run)
		var unsorted []float64
		if p.Unsorted { // before latRow sorts the samples
			unsorted = unsortedSamples(r, div)
		}
		row := s.latRow(r, sz, div)
		row.Unsorted = unsorted
		s.result.Lat = append(s.result.Lat, row)
		if err != nil && !(errors.Is(err, errStopped) && ctx.Err() != nil) {
			return err
		}
		if p.Unsorted {
			s.printUnsorted(unsorted)
		}
		s.printf("%s", s.cpuRowEnd(formatLatRow(row.Size, row.Iters, row.LatStats)))
		if s.fig != nil {
			fmt.Fprintf(s.fig, "%f\n", row.Avg) // perftest's OUTPUT_LAT: the average
		}
		s.outJSONLat(row)
		s.reportCounterFiles()
		if p.Histogram {
			s.printHistogram(r, div)
		}
		if err != nil {
			return err
		}
	}
	if err := s.peekAtomic(true); err != nil {
		return err
	}
	s.printf("%s", resultLine)
	if p.Verb == VerbWrite {
		// ib_write_lat ends without a closing handshake; in duration
		// mode each side stops on its own clock, so wait for the peer's.
		return s.endOwnClock()
	}
	if err := s.closeThenCheckAtomic(r, true, false); err != nil {
		return err
	}
	return s.checkSRQ(r)
}

// closeThenCheckAtomic ends the exchange and then, in atomic runs, checks
// the memory (checkAtomic): after the closing handshake the peer's
// operations on this side's memory have all completed.
func (s *Session) closeThenCheckAtomic(r *runner, posted, target bool) error {
	if err := s.closeConn(); err != nil {
		return err
	}
	if s.P.Verb != VerbAtomic {
		return nil
	}
	return s.checkAtomic(r, posted, target)
}

// endOwnClock ends a duration write_lat run without releasing anything
// while the peer may still post into it. Each side stops on its own
// clock (as perftest's) and ib_write_lat has no closing handshake, so a
// side that started later by more than the margin was still in its
// sampling window when the first one tore down its MR and QP, and its
// next write failed (remote access error, or retries exceeded). So this
// side, its loop over, says so and waits for the peer to say the same
// before teardown: "done\0" (to an rdmactl peer, whose watchPeer then
// ends its loop at once: nothing more will come) and a FIN (shutdown; a
// perftest peer never reads the socket again, and closes it only when it
// exits, after destroy_ctx). Both sides write before they read, so two
// rdmactl sides cannot wait on each other. The wait is bounded by a
// whole run and a step; Ctrl-C ends it (newConn).
//
// An rdmactl peer that ends its run writes "done\0" first, whatever ended
// its loop, so its hang-up without it means it failed (its port went down
// in the run's last moment, say): the error says so, and this side's run
// fails too, its row already printed. (A perftest peer says nothing.)
func (s *Session) endOwnClock() error {
	if s.P.Duration == 0 || s.conn == nil {
		return nil
	}
	tc, ok := s.conn.c.(*net.TCPConn)
	if !ok {
		return nil // -R: the exchange is not on TCP (cm.go)
	}
	_ = tc.SetWriteDeadline(time.Now().Add(s.StepTimeout))
	if s.conn.peerVer.Rdmactl {
		_, _ = tc.Write([]byte(doneRecord))
	}
	_ = tc.CloseWrite()
	_ = tc.SetReadDeadline(time.Now().Add(s.P.Duration + s.StepTimeout))
	var got bytes.Buffer
	_, err := io.Copy(&got, io.LimitReader(tc, 4096)) // to EOF (or a reset)
	if s.peerSendsDone() && !s.peerDone.Load() && !bytes.Contains(got.Bytes(), []byte(doneRecord)) {
		why := "closed the connection"
		if err != nil {
			why = "stopped answering"
		}
		return peerErrorf("peer %s %s without ending its run (it failed or was stopped; see its output)", s.conn.RemoteAddr(), why)
	}
	return nil
}

func (s *Session) latRow(r *runner, sz uint64, div float64) LatRow {
	var st LatStats
	if r.hist != nil {
		st = r.hist.stats(div)
	} else {
		st = summarizeSamples(r.posted[:r.nSamples], div)
	}
	iters := s.P.Iters
	if s.P.Duration > 0 || s.result.Interrupted {
		iters = st.Samples
	}
	return LatRow{Size: sz, Iters: iters, LatStats: st}
}

// unsortedSamples returns r's samples in the order taken, in usec divided
// by div (the row's unit).
func unsortedSamples(r *runner, div float64) []float64 {
	v := make([]float64, r.nSamples)
	for i, d := range r.posted[:r.nSamples] {
		v[i] = float64(d) / 1e3 / div
	}
	return v
}

// printUnsorted prints samples as perftest's -U does: "#, usec", one
// "N, value" line each (C's %g), then the table's header again.
func (s *Session) printUnsorted(v []float64) {
	if s.Out == nil {
		return
	}
	var b strings.Builder
	b.WriteString("#, usec\n")
	for i, x := range v {
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(", ")
		b.WriteString(strconv.FormatFloat(x, 'g', 6, 64))
		b.WriteString("\n")
	}
	b.WriteString(resultLine)
	b.WriteString(latHeader)
	s.printf("%s", b.String())
}

func (s *Session) printHistogram(r *runner, div float64) {
	var hb []HistBucket
	if r.hist != nil {
		hb = coarseHistogram(nil, r.hist, div)
	} else {
		hb = coarseHistogram(r.posted[:r.nSamples], nil, div)
	}
	s.result.Histogram = hb
	if s.Out == nil {
		return
	}
	var total uint64
	for _, b := range hb {
		total += b.Count
	}
	s.printf(" histogram [usec]      count\n")
	for _, b := range hb {
		bar := int(float64(b.Count) / float64(max(total, 1)) * 40)
		s.printf(" %8.2f - %-8.2f %8d  %s\n", b.LowUsec, b.HighUsec, b.Count, bars(bar))
	}
}

func bars(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '#'
	}
	return string(b)
}

// settle returns the heap's free memory to the OS (a GC, then a full
// scavenge: debug.FreeOSMemory) before a run, at its first start
// handshake, where the peer waits in the exchange and not in its loop.
// The runner's buffers, allocated after it, usually fit in the heap goal
// the GC set, so they give the scavenger no work.
//
// Why: otherwise, when setup left free heap behind, the runtime's
// background scavenger returns it during the run, a little at a time (it
// paces itself to about 1% of a CPU), waking a thread every 100 ms or so.
// In a latency pair both CPUs spin, so each wake-up preempts a loop: ours,
// or the peer's when the thread lands on the peer's CPU, a switch into
// another address space (under TCG also a flush of the emulated TLB).
// Traced in the VM (sched_switch, 10000-iteration 2-byte write_lat pairs
// of rdmactl): without settle, one of four runs had runtime threads of
// the other process on a loop's CPU at 18, 26, 125 ms and on, the other
// three one or none after the loops' first 0.1 s (where threads woken at
// the start get their turn); with it, three runs had none after 0.11 s.
// perftest's processes have no such threads. Then rtloop.ParkSysmon, for the
// same reason. Once per run: measure clears the flag.
func (s *Session) settle() {
	if s.settled {
		return
	}
	debug.FreeOSMemory()
	rtloop.ParkSysmon()
	s.settled = true
}

// measure runs one loop with the peer watcher, the progress line and the
// interval reports around it, and turns the runner's data into a BW row
// (latency rows are built by the caller).
func (s *Session) measure(ctx context.Context, r *runner, loop func() error) (BWResult, error) {
	stopWatch := s.watchPeer()
	stopProg := s.progress(r)
	if s.testBeforeLoop != nil {
		s.testBeforeLoop()
	}
	var cpu *cpuSampler
	if s.P.Report.CPUUtil {
		read := s.cpuStat
		if read == nil {
			read = readCPUStat
		}
		cpu = startCPUSampler(s.P.Margin, s.P.Duration, read)
	}
	err := loop()
	if cpu != nil {
		pct, cerr := cpu.stop()
		if cerr != nil && err == nil {
			err = cerr
		}
		s.result.CPUUtil = pct
	}
	s.result.Loop = r.loopMode()
	if r.ev != nil {
		s.result.CompEvents = r.ev.events
	}
	s.settled = false
	if errors.Is(err, errDeadline) || errors.Is(err, errStopped) && s.peerDone.Load() && ctx.Err() == nil {
		err = nil // duration mode: the peer stopped on its own clock
	}
	stopProg()
	stopWatch()
	// A peer that says when its own clock ended ("done", endOwnClock)
	// and hung up without saying it failed, even when our deadline came
	// within the second peerLeft gives a peer that finished: the pair's
	// run did not end as it should (its port went down, say).
	if err == nil && s.peerGone.Load() && !s.peerDone.Load() && s.peerSendsDone() && ctx.Err() == nil {
		return BWResult{}, peerErrorf("peer %s closed the connection during the run (it failed or was stopped; see its output)", s.conn.RemoteAddr())
	}
	var res BWResult
	if s.P.Test == TestBW {
		res = s.bwResult(r)
	}
	// Whatever the loop saw (an error completion, a stall, nothing before
	// the deadline), a run whose port went down failed, and that is why.
	if ctx.Err() == nil {
		if perr := s.portDownErr(0); perr != nil {
			return res, perr
		}
	}
	if err == nil {
		return res, nil
	}
	if errors.Is(err, errStopped) {
		if ctx.Err() != nil {
			s.result.Interrupted = true
			if s.P.Test == TestBW && r.nDone > 0 {
				s.addBW(res)
			}
			return res, err
		}
		if s.peerGone.Load() {
			return res, peerErrorf("peer %s closed the connection during the run", s.conn.RemoteAddr())
		}
	}
	if errors.Is(err, errStalled) && s.peerGone.Load() {
		return res, peerErrorf("peer %s closed the connection during the run", s.conn.RemoteAddr())
	}
	// The error names the device and port, which matter when the fabric
	// failed under the run (a port that went down, a device removed).
	return res, r.loopErr(err, s.result.Test+" on "+s.P.portName())
}

func (s *Session) bwResult(r *runner) BWResult {
	p := s.P
	// A receiving server counts messages between its first and last
	// receive; a -b server sends too and, in iteration mode, has its
	// sending half's completion events as the client (its tEnd is set in
	// duration mode only).
	if p.Duration > 0 || p.passive() && !p.Bidir {
		return bwFromCount(r.size, r.nDone, r.tEnd-r.tStart, p.Gbits)
	}
	res := bwFromEvents(r.size, r.tStart, r.evT[:r.nEv], r.evC[:r.nEv], uint64(p.TxDepth*p.QPs), p.Gbits)
	if p.Report.NoPeak {
		res.BWPeak = 0 // perftest's -N: peak_up = !noPeak * ... (print_report_bw)
	}
	return res
}

// watchPeer notices the peer closing the TCP connection during the run
// (it crashed or was stopped) and stops the loop, without reading. It
// waits in Go's network poller, so no thread sleeps in a system call
// meanwhile: a goroutine blocked in poll(2) keeps its P in the syscall
// state, the runtime's sysmon interrupts it every 10 ms, and each EINTR
// made the runtime move the benchmark loop to another thread through a
// futex wake-up, which showed as millisecond latency outliers under load.
func (s *Session) watchPeer() func() {
	if s.cm != nil {
		return s.watchPeerCM()
	}
	if s.conn == nil {
		return func() {} // --connectionless
	}
	tc, ok := s.conn.c.(*net.TCPConn)
	if !ok {
		return func() {}
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return func() {}
	}
	// The last exchange read left a step deadline; the run may be longer.
	_ = tc.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	doneCounts := s.peerSendsDone()
	go func() {
		defer wg.Done()
		gone, finished := false, false
		// Called whenever the socket turns readable (data, FIN, reset);
		// returning false waits for the next event. A non-blocking poll
		// tells a hang-up from data the exchange will read afterwards.
		_ = rc.Read(func(fd uintptr) bool {
			if doneCounts && peekDone(fd) {
				finished = true
				return true
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
			n, err := unix.Poll(fds, 0)
			gone = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
			return gone
		})
		if finished {
			// The peer ended its run on its own clock (endOwnClock) and
			// answers no more: end ours now, without an error.
			s.peerDone.Store(true)
			s.stop.Store(true)
			return
		}
		if !gone {
			return // stopped: our deadline, or Ctrl-C's (newConn)
		}
		s.peerLeft(done)
	}()
	return func() {
		close(done)
		_ = tc.SetReadDeadline(time.Now()) // ends rc.Read
		wg.Wait()
	}
}

// peerSendsDone: the peer ends its run with "done\0" while ours may still
// run (endOwnClock). Only a duration write_lat peer that is rdmactl does,
// over TCP (not -R); in other tests the peer's next record may arrive
// early and is the exchange's.
func (s *Session) peerSendsDone() bool {
	p := s.P
	return p.Verb == VerbWrite && p.Test == TestLat && p.Duration > 0 && s.cm == nil && s.conn.peerVer.Rdmactl
}

// peerLeft marks the peer gone and stops the loop unless it ends on its
// own within a second (done closed): a peer that finished its last
// iteration may close a moment before our loop sees its last completion
// (ib_write_lat has no closing handshake).
func (s *Session) peerLeft(done <-chan struct{}) {
	s.peerGone.Store(true)
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.stop.Store(true)
	}
}

// peekDone says whether the socket's next bytes are the peer's
// "done\0" (endOwnClock), without taking them.
func peekDone(fd uintptr) bool {
	var b [len(doneRecord)]byte
	n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return err == nil && n == len(b) && string(b[:]) == doneRecord
}

// progress prints a live line on s.Progress and, with -P.Interval, a
// report row per interval; both read the runner's atomic counter.
func (s *Session) progress(r *runner) func() {
	p := s.P
	if s.Progress == nil && p.Interval == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := 500 * time.Millisecond
		if p.Interval > 0 {
			tick = min(tick, p.Interval)
		}
		t := time.NewTicker(tick)
		defer t.Stop()
		start := time.Now()
		lastIv, lastN := start, uint64(0)
		shown := false
		total := p.Iters
		if p.Test == TestBW {
			total *= uint64(p.QPs)
		}
		for {
			select {
			case <-done:
				if shown {
					fmt.Fprint(s.Progress, "\r\033[K")
				}
				return
			case now := <-t.C:
				n := r.progress.Load()
				if p.Interval > 0 && p.Test == TestBW && now.Sub(lastIv) >= p.Interval {
					iv := bwFromCount(r.size, n-lastN, int64(now.Sub(lastIv)), p.Gbits)
					s.result.Intervals = append(s.result.Intervals, iv)
					s.printf("%s", formatBWRow(iv))
					lastIv, lastN = now, n
				}
				if s.Progress != nil && now.Sub(start) >= time.Second {
					el := now.Sub(start).Seconds()
					if p.Duration > 0 {
						fmt.Fprintf(s.Progress, "\r\033[K %s %d B: %.0f/%.0f s, %d done", s.result.Test, r.size, el, p.Duration.Seconds(), n)
					} else {
						fmt.Fprintf(s.Progress, "\r\033[K %s %d B: %d/%d (%.0f%%), %.1f s", s.result.Test, r.size, n, total, 100*float64(n)/float64(max(total, 1)), el)
					}
					shown = true
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// note writes a warning line to Notes, if any.
func (s *Session) note(line string) {
	if s.Notes != nil {
		fmt.Fprintln(s.Notes, line)
	}
}

// perftestBufSize is the buffer size perftest 6.06's alloc_ctx computes
// (src/perftest_resources.c): the message (or -a's largest), at least
// the cycle buffer, rounded up to the 64-byte cache line, twice (send and
// receive halves), for each QP unless --mr_per_qp, plus a cache line for
// UD. rdmactl's own buffer (bufSize) keeps room for the GRH instead.
func perftestBufSize(p *Params, cycle uint64) uint64 {
	const cacheLine = 64
	b := max(p.maxSize(), cycle)
	b = (b + cacheLine - 1) / cacheLine * cacheLine
	n := uint64(p.QPs)
	if p.MRPerQP {
		n = 1
	}
	total := b * 2 * n
	if p.Conn == UD {
		total += cacheLine
	}
	return total
}
