package perf

import (
	"fmt"
	"os"
	"strings"
)

// --out_json / --out_json_file: perftest's report file (print_full_bw_report,
// print_report_lat and print_report_lat_duration with out_json, and
// write_test_info_to_file, write_bw_report_to_file,
// write_report_lat_to_file, write_report_lat_duration_to_file in
// perftest's src/perftest_parameters.c at v4.5-0.18, perftest 6.06).
//
// It is perftest 6.06's text exactly: "key: value" lines in braces, keys
// unquoted and every entry followed by a comma, which no JSON parser
// reads; perftest since 6.2x quotes the same keys and writes JSON.
// perftest rewrites the file (O_TRUNC, mode 0600) at every report row it
// prints, so it ends up holding the last one: with -a the largest size,
// with --report-both the peer's half. rdmactl does the same. rdmactl's own
// JSON (-j) is unrelated and unchanged.

// DefaultOutJSONFile is perftest's DEFAULT_JSON_FILE_NAME, in the
// working directory.
const DefaultOutJSONFile = "perftest_out.json"

// outJSONTestInfo is write_test_info_to_file's block.
func (s *Session) outJSONTestInfo() string {
	p, in := s.P, s.info()
	var b strings.Builder
	b.WriteString("test_info: {\n")
	b.WriteString("test: " + p.testsStr() + "_")
	if p.Verb == VerbAtomic {
		b.WriteString(p.Atomic.String() + "_")
	}
	if p.Test == TestBW {
		if p.Bidir {
			b.WriteString("Bidirectional_")
		}
		if p.PostList > 1 {
			b.WriteString("Post_List_")
		}
		b.WriteString("BW_")
	} else {
		b.WriteString("Latency_")
	}
	b.WriteString("Test,\n")
	if p.UseEvent {
		fmt.Fprintf(&b, "Test with events: Using_%s_comp%d,\n", in.Device, p.CompVector)
	}
	fmt.Fprintf(&b, "Dual_port: OFF,\nDevice: \"%s\",\n", in.Device)
	fmt.Fprintf(&b, "Number_of_qps: %d,\nTransport_type: IB,\n", p.QPs)
	srq := "OFF"
	if p.UseSRQ {
		srq = "ON"
	}
	fmt.Fprintf(&b, "Connection_type: %s,\nUsing_SRQ: %s,\n", p.Conn, srq)
	// perftest built with relaxed ordering (HAVE_RO) says ON unless
	// --disable_pcie_relaxed or in write_lat, as rdmactl registers.
	if p.relaxedOrdering() {
		b.WriteString("PCIe_relax_order: ON,\n")
	} else {
		b.WriteString("PCIe_relax_order: OFF,\n")
	}
	// perftest posts through the ibv_wr_* API unless --use_old_post_send;
	// rdmactl uses neither libibverbs call.
	b.WriteString("ibv_wr_API: OFF,\n")
	if !p.passive() || p.Bidir {
		fmt.Fprintf(&b, "TX_depth : %d,\n", p.TxDepth)
	}
	if p.PostList > 1 {
		fmt.Fprintf(&b, "Post_List: %d,\n", p.PostList)
	}
	if p.RecvPostList > 1 { // perftest 6.29's, in 6.06's style
		fmt.Fprintf(&b, "Recv_Post_List: %d,\n", p.RecvPostList)
	}
	if p.recvComp() && (p.passive() || p.Bidir) {
		fmt.Fprintf(&b, "RX_depth: %d,\n", p.RxDepth)
	}
	if p.Test == TestBW {
		fmt.Fprintf(&b, "CQ_Moderation: %d,\n", p.CQMod)
	}
	fmt.Fprintf(&b, "Mtu: %d,\n", in.MTU)
	fmt.Fprintf(&b, "Link_type: %s,\n", perftestLinkLayer(in.LinkType))
	if in.WithGID {
		fmt.Fprintf(&b, "GID_index: %d,\n", in.GIDIndex)
	}
	if p.Verb.isReadLike() {
		fmt.Fprintf(&b, "Outstand_reads: %d,\n", in.OutReads)
	} else {
		fmt.Fprintf(&b, "Max_inline_data: %d,\n", p.Inline)
	}
	cm, ex := "OFF", p.exchangeMethod()
	if p.RDMACM {
		cm = "ON"
	}
	fmt.Fprintf(&b, "rdma_cm_QPs: %s,\n", cm)
	fmt.Fprintf(&b, "Data_ex_method: %s,\n", ex)
	if p.RDMACM && p.QoS.TOS >= 0 {
		fmt.Fprintf(&b, "TOS: %d,\n", p.QoS.TOS)
	}
	b.WriteString("},\n")
	return b.String()
}

// perftestLinkLayer is perftest's link_layer_str for the Info's name.
func perftestLinkLayer(s string) string {
	switch s {
	case "Ethernet":
		return "Ethernet"
	case "InfiniBand", "Unspecified":
		return "IB"
	}
	return "Unknown"
}

// outJSONBW writes the file for a BW report row (write_bw_report_to_file).
func (s *Session) outJSONBW(r BWResult) {
	if s.P.Report.OutJSON == "" {
		return
	}
	var b strings.Builder
	b.WriteString("results: {\n")
	switch s.P.Report.Output {
	case OutputBW:
		fmt.Fprintf(&b, "bw_avg: %f,\n", r.BWAvg)
	case OutputMsgRate:
		fmt.Fprintf(&b, "msgRate_avg: %f,\n", r.MsgRate)
	default:
		f := "MsgSize: %d,\nn_iterations: %d,\nBW_peak: %.2f,\nBW_average: %.2f,\nMsgRate: %.6f,\n"
		if r.BWAvg < 0.1 && s.P.Gbits { // perftest's inc_accuracy
			f = "MsgSize: %d,\nn_iterations: %d,\nBW_peak: %.6f,\nBW_average: %.6f,\nMsgRate: %.6f,\n"
		}
		fmt.Fprintf(&b, f, r.Size, r.Iters, r.BWPeak, r.BWAvg, r.MsgRate)
		b.WriteString(s.outJSONCPU())
	}
	b.WriteString("},\n")
	s.writeOutJSON(b.String())
}

// outJSONLat writes the file for a latency row: write_report_lat_to_file,
// or write_report_lat_duration_to_file in duration mode.
func (s *Session) outJSONLat(row LatRow) {
	p := s.P
	if p.Report.OutJSON == "" {
		return
	}
	var b strings.Builder
	b.WriteString("results: {\n")
	switch {
	case p.Duration > 0 && p.Report.Output == OutputLat:
		fmt.Fprintf(&b, "t_avg: %f\n", row.Avg)
	case p.Duration > 0:
		// tps: iterations per second of the measured window (the
		// run less its two margins).
		tps := 0.0
		if w := (p.Duration - 2*p.Margin).Seconds(); w > 0 {
			tps = float64(row.Iters) / w
		}
		fmt.Fprintf(&b, "MsgSize: %d,\nn_iterations: %d,\nt_avg: %.2f,\ntps_average: %.2f,\n", row.Size, row.Iters, row.Avg, tps)
		b.WriteString(s.outJSONCPU())
	case p.Report.Output == OutputLat:
		fmt.Fprintf(&b, "avg_lat: %f,\n", row.Avg)
	default:
		fmt.Fprintf(&b, "MsgSize: %d,\nn_iterations: %d,\nt_min: %.2f,\nt_max: %.2f,\nt_typical: %.2f,\nt_avg: %.2f,\nt_stdev: %.2f,\npercentile_99: %.2f,\npercentile_99.9: %.2f,\n",
			row.Size, row.Iters, row.Min, row.Max, row.Typical, row.Avg, row.Stdev, row.P99, row.P999)
		b.WriteString(s.outJSONCPU())
	}
	b.WriteString("},\n")
	s.writeOutJSON(b.String())
}

// outJSONCPU is REPORT_EXT_JSON (nothing) or, with --cpu_util,
// REPORT_EXT_CPU_UTIL_JSON.
func (s *Session) outJSONCPU() string {
	if !s.P.Report.CPUUtil {
		return ""
	}
	pct := 0.0
	if v := s.result.CPUUtil; v != nil {
		pct = *v
	}
	return fmt.Sprintf("CPU_util: %.2f,\n", pct)
}

// writeOutJSON replaces the file with the test information and results
// (open_file_write: O_CREAT|O_TRUNC, mode 0600). A failure is kept for
// the end of the run (OutJSONErr); perftest prints "failed to open" and
// goes on.
func (s *Session) writeOutJSON(results string) {
	err := os.WriteFile(s.P.Report.OutJSON, []byte("{\n"+s.outJSONTestInfo()+results+"}\n"), 0o600)
	if err != nil && s.outJSONErr == nil {
		s.outJSONErr = fmt.Errorf("--out_json: %w", err)
	}
}

// OutJSONErr is the first error writing the --out_json file, if any.
func (s *Session) OutJSONErr() error { return s.outJSONErr }
