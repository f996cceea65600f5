package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// --out_json: each side writes perftest 6.06's file, byte for byte what
// perftest's write_test_info_to_file and write_*_report_to_file print for
// the same run, with the figures of the row the side printed.
func TestSessionOutJSON(t *testing.T) {
	dir := t.TempDir()
	srv := Params{Verb: VerbWrite, Test: TestBW, Iters: 200, Report: ReportOpts{OutJSON: filepath.Join(dir, "s.json")}}
	cli := Params{Verb: VerbWrite, Test: TestBW, Iters: 200, Report: ReportOpts{OutJSON: filepath.Join(dir, "c.json")}}
	s, c, _ := runPair(t, srv, cli)
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	row := c.res.BW[0]
	in := c.res.Info
	info := func(txDepth string) string {
		return "test_info: {\ntest: RDMA_Write_BW_Test,\nDual_port: OFF,\nDevice: \"" + in.Device + "\",\nNumber_of_qps: 1,\nTransport_type: IB,\n" +
			"Connection_type: RC,\nUsing_SRQ: OFF,\nPCIe_relax_order: ON,\nibv_wr_API: OFF,\n" + txDepth +
			"CQ_Moderation: 1,\n" + fmt.Sprintf("Mtu: %d,\nLink_type: %s,\n", in.MTU, perftestLinkLayer(in.LinkType)) +
			gidLine(in) + "Max_inline_data: 0,\nrdma_cm_QPs: OFF,\nData_ex_method: Ethernet,\n},\n"
	}
	results := fmt.Sprintf("results: {\nMsgSize: 65536,\nn_iterations: 200,\nBW_peak: %.2f,\nBW_average: %.2f,\nMsgRate: %.6f,\n},\n", row.BWPeak, row.BWAvg, row.MsgRate)
	for _, f := range []struct{ path, want string }{
		{cli.Report.OutJSON, "{\n" + info("TX_depth : 128,\n") + results + "}\n"},
		// The server prints the client's row, and writes it.
		{srv.Report.OutJSON, "{\n" + info("") + results + "}\n"},
	} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != f.want {
			t.Errorf("%s:\n%s\nwant:\n%s", f.path, got, f.want)
		}
		if st, err := os.Stat(f.path); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600 (perftest's S_IRUSR|S_IWUSR)", f.path, st.Mode(), err)
		}
	}
}

func gidLine(in Info) string {
	if in.WithGID {
		return fmt.Sprintf("GID_index: %d,\n", in.GIDIndex)
	}
	return ""
}

// The keys of the results block, by test: perftest's REPORT_FMT_*_JSON.
func TestSessionOutJSONShapes(t *testing.T) {
	dir := t.TempDir()
	keyRE := regexp.MustCompile(`(?m)^([A-Za-z_ .0-9]+): `)
	for _, c := range []struct {
		name     string
		p        Params
		test     string
		keys     string
		lastSize string // the file holds the last row printed
	}{
		{"send_bw_bidir_postlist", Params{Verb: VerbSend, Test: TestBW, Bidir: true, Iters: 100, PostList: 4, TxDepth: 16}, "Send_Bidirectional_Post_List_BW_Test",
			"MsgSize n_iterations BW_peak BW_average MsgRate", "65536"},
		{"write_bw_all", Params{Verb: VerbWrite, Test: TestBW, AllSizes: true, Iters: 20}, "RDMA_Write_BW_Test",
			"MsgSize n_iterations BW_peak BW_average MsgRate", "8388608"},
		{"atomic_lat", Params{Verb: VerbAtomic, Test: TestLat, Iters: 50, Atomic: AtomicCmpSwap}, "Atomic_CMP_AND_SWAP_Latency_Test",
			"MsgSize n_iterations t_min t_max t_typical t_avg t_stdev percentile_99 percentile_99.9", "8"},
		{"send_lat_duration", Params{Verb: VerbSend, Test: TestLat, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}, "Send_Latency_Test",
			"MsgSize n_iterations t_avg tps_average", "2"},
		{"write_bw_duration_cpu", Params{Verb: VerbWrite, Test: TestBW, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond, Report: ReportOpts{CPUUtil: true}}, "RDMA_Write_BW_Test",
			"MsgSize n_iterations BW_peak BW_average MsgRate CPU_util", "65536"},
		{"write_bw_output", Params{Verb: VerbWrite, Test: TestBW, Iters: 100, Report: ReportOpts{Output: OutputMsgRate}}, "RDMA_Write_BW_Test",
			"msgRate_avg", ""},
		{"read_lat_output", Params{Verb: VerbRead, Test: TestLat, Iters: 100, Report: ReportOpts{Output: OutputLat}}, "RDMA_Read_Latency_Test",
			"avg_lat", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cli := c.p
			cli.Report.OutJSON = filepath.Join(dir, c.name+".json")
			s, cl, _ := runPair(t, c.p, cli)
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			b, err := os.ReadFile(cli.Report.OutJSON)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			i := strings.Index(text, "results: {\n")
			if !strings.HasPrefix(text, "{\ntest_info: {\ntest: "+c.test+",\n") || i < 0 || !strings.HasSuffix(text, "},\n}\n") {
				t.Fatalf("not perftest's shape:\n%s", text)
			}
			var keys []string
			for _, m := range keyRE.FindAllStringSubmatch(text[i+len("results: {\n"):], -1) {
				keys = append(keys, m[1])
			}
			if strings.Join(keys, " ") != c.keys {
				t.Fatalf("results keys %q, want %q:\n%s", keys, c.keys, text)
			}
			if c.lastSize != "" && !strings.Contains(text, "MsgSize: "+c.lastSize+",\n") {
				t.Fatalf("not the last row's size %s:\n%s", c.lastSize, text)
			}
		})
	}
}

// A file that cannot be written fails the run at its end (the report is
// printed first).
func TestSessionOutJSONError(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50}
	cli := p
	cli.Report.OutJSON = filepath.Join(t.TempDir(), "no", "such", "dir.json")
	var cs *Session
	s, c, _ := runPairWith(t, p, cli, 0, func(_, cli *Session) { cs = cli })
	if s.err != nil || c.err != nil || len(c.res.BW) != 1 {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	if err := cs.OutJSONErr(); err == nil || !strings.Contains(err.Error(), "--out_json") {
		t.Fatalf("OutJSONErr %v", err)
	}
}
