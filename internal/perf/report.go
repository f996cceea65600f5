package perf

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Text output in perftest's layout (perftest_parameters.h at v4.5-0.17,
// the VM's perftest): same separator lines, header lines and row printf
// formats, so that scripts parsing ib_*_bw/_lat output parse ours.

const resultLine = "---------------------------------------------------------------------------------------\n"

// bwHeader is the BW table's header as perftest prints it since its
// commit 1d202bb (2024-03): MiB/sec, the unit the figures always were
// (2^20 bytes). perftest 6.06 (Debian 12) still says MB/sec for the same
// numbers; the rows, which scripts read, are identical (docs/perf.md).
// Under a perftest test's name (asPerftest) it is 6.06's.
func bwHeader(gbits, asPerftest bool) string {
	switch {
	case gbits:
		return " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	case asPerftest:
		return " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	}
	return " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
}

const latHeader = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"

// formatBWRow is REPORT_FMT + REPORT_EXT.
func formatBWRow(r BWResult) string {
	return fmt.Sprintf(" %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n", r.Size, r.Iters, r.BWPeak, r.BWAvg, r.MsgRate)
}

// formatLatRow is REPORT_FMT_LAT + REPORT_EXT.
func formatLatRow(size, iters uint64, s LatStats) string {
	return fmt.Sprintf(" %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
		size, iters, s.Min, s.Max, s.Typical, s.Avg, s.Stdev, s.P99, s.P999)
}

// testsStr is perftest's name of the test's verb (testsStr in
// src/perftest_parameters.c; the _imm names are 6.29's).
func (p *Params) testsStr() string {
	switch {
	case p.SendImm:
		return "Send_imm"
	case p.WriteImm:
		return "RDMA_Write_imm"
	}
	return map[Verb]string{VerbSend: "Send", VerbWrite: "RDMA_Write", VerbRead: "RDMA_Read", VerbAtomic: "Atomic"}[p.Verb]
}

// testTitle is the centred title line of ctx_print_test_info.
func testTitle(p *Params) string {
	verb := p.testsStr()
	if p.Verb == VerbAtomic {
		verb += " " + p.Atomic.String()
	}
	kind := "BW"
	if p.Test == TestLat {
		kind = "Latency"
	}
	t := verb + " "
	if p.Bidir {
		t += "Bidirectional "
	}
	if p.PostList > 1 {
		t += "Post List "
	}
	t += kind + " "
	if p.Mcast {
		t += "Multicast "
	}
	return "                    " + t + "Test\n"
}

// Info is what the header block shows about the run.
type Info struct {
	Device   string `json:"device"`
	Port     int    `json:"port"`
	LinkType string `json:"link_type"`
	GIDIndex int    `json:"gid_index"`
	MTU      int    `json:"mtu"`
	Peer     string `json:"peer"`
	PeerVer  string `json:"peer_version"`
	// The run's queue parameters, as the header shows them (perftest
	// prints TX depth only on a sender, CQ moderation only for bandwidth;
	// JSON always has them, so that a script needs no per-test rules).
	TxDepth  int `json:"tx_depth"`
	RxDepth  int `json:"rx_depth"`
	CQMod    int `json:"cq_moderation"`
	PostList int `json:"post_list"`
	Inline   int `json:"max_inline_data"` // bytes
	// OutReads is the RDMA READs in flight this side allows (READ tests;
	// 0 for the others).
	OutReads int `json:"outstanding_reads"`
	// RDMACM says the run was connected by the RDMA CM (-R).
	RDMACM bool `json:"rdma_cm,omitempty"`
	// MGID is a multicast run's group (-g), the one this side receives
	// from or sends to, as an IPv6 address.
	MGID    string `json:"mgid,omitempty"`
	Local   []Dest `json:"-"`
	Remote  []Dest `json:"-"`
	WithGID bool   `json:"-"`
}

// writeHeader prints the block perftest prints before the results.
func writeHeader(w io.Writer, p *Params, in *Info) {
	var b strings.Builder
	b.WriteString(resultLine)
	b.WriteString(testTitle(p))
	if p.UseEvent {
		// ctx_print_test_info's events line (eq_num: -X, 0 without it).
		fmt.Fprintf(&b, " Test with events. Using %s_comp%d\n", in.Device, p.CompVector)
	}
	if p.Mcast {
		b.WriteString(" MultiCast runs on UD!\n")
	}
	fmt.Fprintf(&b, " Dual-port       : OFF\t\tDevice         : %s\n", in.Device)
	fmt.Fprintf(&b, " Number of qps   : %d\t\tTransport type : IB\n", p.QPs)
	srq := "OFF"
	if p.UseSRQ {
		srq = "ON"
	}
	fmt.Fprintf(&b, " Connection type : %s\t\tUsing SRQ      : %s\n", p.Conn, srq)
	if p.Report.AsPerftest {
		// perftest 6.06's ctx_print_test_info (src/perftest_parameters.c)
		// says whether it registers its memory with PCIe relaxed
		// ordering, as rdmactl does (Params.relaxedOrdering), warning
		// where the CPU's root ports are known not to order such writes
		// well (pcieROCompliant), and whether it posts through
		// libibverbs' ibv_wr_* API (ON for ConnectX-4 and later,
		// BlueField and EFA; OFF elsewhere, rxe included): rdmactl posts
		// through its own data path and says OFF.
		if p.relaxedOrdering() {
			b.WriteString(" PCIe relax order: ON\n")
			if !pcieROCompliant("/sys") {
				b.WriteString(" WARNING: CPU is not PCIe relaxed ordering compliant.\n")
				b.WriteString(" WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client.\n")
			}
		} else {
			b.WriteString(" PCIe relax order: OFF\n")
		}
		b.WriteString(" ibv_wr* API     : OFF\n")
	}
	if !p.passive() || p.Bidir { // a latency server has none either (machine == CLIENT || duplex)
		fmt.Fprintf(&b, " TX depth        : %d\n", p.TxDepth)
	}
	if p.PostList > 1 {
		fmt.Fprintf(&b, " Post List       : %d\n", p.PostList)
	}
	if p.RecvPostList > 1 { // perftest 6.29's ctx_print_test_info
		fmt.Fprintf(&b, " Recv Post List  : %d\n", p.RecvPostList)
	}
	if p.recvComp() && (p.passive() || p.Bidir) { // send_lat's server too (machine == SERVER || duplex)
		fmt.Fprintf(&b, " RX depth        : %d\n", p.RxDepth)
	}
	if p.Test == TestBW {
		fmt.Fprintf(&b, " CQ Moderation   : %d\n", p.CQMod)
	}
	fmt.Fprintf(&b, " Mtu             : %d[B]\n", in.MTU)
	fmt.Fprintf(&b, " Link type       : %s\n", in.LinkType)
	if in.WithGID {
		fmt.Fprintf(&b, " GID index       : %d\n", in.GIDIndex)
	}
	if p.Verb.isReadLike() {
		fmt.Fprintf(&b, " Outstand reads  : %d\n", in.OutReads)
	} else {
		fmt.Fprintf(&b, " Max inline data : %d[B]\n", p.Inline)
	}
	if p.RDMACM {
		b.WriteString(" rdma_cm QPs\t : ON\n")
		b.WriteString(" Data ex. method : rdma_cm\n")
		if p.passive() {
			b.WriteString(resultLine)
			b.WriteString(" Waiting for client rdma_cm QP to connect\n")
			b.WriteString(" Please run the same command with the IB/RoCE interface IP\n")
		}
	} else {
		b.WriteString(" rdma_cm QPs\t : OFF\n")
		b.WriteString(" Data ex. method : " + p.exchangeMethod() + "\n")
	}
	b.WriteString(resultLine)
	for i := range in.Local {
		writeAddr(&b, "local", p, &in.Local[i], in.WithGID)
	}
	for i := range in.Remote {
		writeAddr(&b, "remote", p, &in.Remote[i], in.WithGID)
	}
	b.WriteString(resultLine)
	_, _ = io.WriteString(w, b.String())
}

// writeAddr is ctx_print_pingpong_data (BASIC_ADDR_FMT, READ_FMT, RDMA_FMT
// and PERF_GID_FMT with its decimal GID bytes).
func writeAddr(b *strings.Builder, side string, p *Params, d *Dest, withGID bool) {
	fmt.Fprintf(b, " %s address: LID %s QPN %s PSN %s", side, cAltHex(uint64(d.LID), 4), cAltHex(uint64(d.QPN), 6), cAltHex(uint64(d.PSN), 6))
	if p.Verb == VerbRead {
		fmt.Fprintf(b, " OUT %s", cAltHex(uint64(d.OutReads), 4))
	}
	if p.Verb == VerbRead || p.Verb == VerbWrite { // perftest prints neither for atomics
		fmt.Fprintf(b, " RKey %s VAddr %s", cAltHex(uint64(d.RKey), 8), cAltHex(d.VAddr, 16))
	}
	b.WriteString("\n")
	if withGID {
		g, label := d.GID, "GID"
		if mgidLabel(p, side) {
			label = "MGID"
		}
		fmt.Fprintf(b, " %s: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n", label,
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15])
	}
}

// Result is the JSON document of one run (-j).
type Result struct {
	Test      string       `json:"test"` // e.g. "write_bw"
	Role      string       `json:"role"` // "client" or "server"
	Conn      string       `json:"connection_type"`
	QPs       int          `json:"num_qps"`
	Info      Info         `json:"info"`
	Unit      string       `json:"bw_unit,omitempty"` // "MiB/s" or "Gb/s"
	BW        []BWResult   `json:"bw,omitempty"`
	Lat       []LatRow     `json:"lat,omitempty"`
	Intervals []BWResult   `json:"intervals,omitempty"`
	Histogram []HistBucket `json:"histogram,omitempty"`
	// Source says whose numbers BW holds: "local", or "peer" when a
	// write/read server prints the client's report (as perftest does).
	Source      string `json:"source"`
	Interrupted bool   `json:"interrupted"`
	// Atomic is perf atomic's byte check (atomic.go), SRQ --use-srq's
	// (srq.go).
	Atomic *AtomicCheck `json:"atomic,omitempty"`
	SRQ    *SRQCheck    `json:"srq,omitempty"`
	// Validation is --data_validation's verdict on the side that checks
	// (validation.go).
	Validation *ValidationResult `json:"validation,omitempty"`
	// Loop is how this side's measurement loops ran: "detached" (off
	// the Go scheduler) or "plain" (attached, on a locked thread); see
	// package rtloop and perf --loop. Absent when this side ran no loop
	// (the server of write and read tests).
	Loop string `json:"loop,omitempty"`

	// Events and counters:
	// CompEvents is how many completion events this side's loops
	// waited for (-e).
	CompEvents uint64 `json:"comp_events,omitempty"`
	// ReportCounters is -W's counters, each one's change over the run.
	ReportCounters []CounterFileDelta `json:"report_counters,omitempty"`
	// CounterDeltas is --counters': the port's counters that explain a
	// bad run, each one's change over the run.
	CounterDeltas []CounterDelta `json:"counter_deltas,omitempty"`
	// QoS is the QoS options asked for and each QP's attributes as the
	// kernel reports them back (qos.go); Limits the thresholds' verdicts
	// (limits.go; absent without -w, -y, --limit_lat).
	QoS    *QoSReport   `json:"qos,omitempty"`
	Limits []LimitCheck `json:"limits,omitempty"`
	// ReportBoth is --report-both's two halves of a bidirectional run
	// (reportopts.go): this side's figures and the peer's, whose sum BW
	// holds.
	ReportBoth *ReportBoth `json:"report_both,omitempty"`
	// CPUUtil is --cpu_util's figure (cpuutil.go): this side's CPU
	// utilisation over the last measured window, percent; absent when
	// this side ran no loop or the run ended before the window closed.
	CPUUtil *float64 `json:"cpu_util_pct,omitempty"`
}

// LatRow is one latency report row.
type LatRow struct {
	Size  uint64 `json:"bytes"`
	Iters uint64 `json:"iterations"`
	LatStats
	// Unsorted holds every sample in the order taken (-U), in the
	// row's unit (half a round trip for write and send, as the stats).
	Unsorted []float64 `json:"unsorted_usec,omitempty"`
}

// cAltHex is C's "%#0<width>x": the 0x prefix counts in the width and is
// left out for zero.
func cAltHex(v uint64, width int) string {
	if v == 0 {
		return fmt.Sprintf("%0*x", width, v)
	}
	return fmt.Sprintf("0x%0*x", max(width-2, 0), v)
}

// pcieROCompliant is perftest's check_pcie_relaxed_ordering_compliant
// (src/perftest_parameters.c, after a kernel patch that turns the feature
// off for them): false when a PCI device under root is one of Intel's
// Haswell-E and Broadwell-E/EP root ports (vendor 0x8086, device
// 0x6f01..0x6f0e or 0x2f01), read from sysfs as perftest reads libpci.
func pcieROCompliant(root string) bool {
	devs, _ := os.ReadDir(filepath.Join(root, "bus", "pci", "devices"))
	for _, d := range devs {
		dir := filepath.Join(root, "bus", "pci", "devices", d.Name())
		v, _ := os.ReadFile(filepath.Join(dir, "vendor"))
		if strings.TrimSpace(string(v)) != "0x8086" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, "device"))
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 0, 16)
		if err == nil && (id >= 0x6f01 && id <= 0x6f0e || id == 0x2f01) {
			return false
		}
	}
	return true
}
