package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// perf's -e, --run_infinitely, -W and --counters parse into Params, and
// bad combinations are one line on stderr with the usage exit code.
func TestPerfEventFlags(t *testing.T) {
	f, err := parsePerfArgs(perf.VerbWrite, []string{"-d", "rxe1", "-e", "-W", "counters/port_xmit_data,hw_counters/rcvd_seq_err", "--counters", "10.77.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.p.UseEvent || !f.p.CounterDeltas || strings.Join(f.p.ReportCounters, ",") != "counters/port_xmit_data,hw_counters/rcvd_seq_err" {
		t.Fatalf("%+v", f.p)
	}
	f, err = parsePerfArgs(perf.VerbSend, []string{"-e", "-X", "1", "-d", "rxe0"})
	if err != nil || f.p.CompVector != 1 {
		t.Fatalf("-X: %v, %+v", err, f.p)
	}
	f, err = parsePerfArgs(perf.VerbSend, []string{"--run_infinitely", "-d", "rxe0"})
	if err != nil || !f.p.RunInfinitely || f.p.Duration != 5*time.Second {
		t.Fatalf("--run_infinitely: %v, %+v", err, f.p)
	}
	for _, args := range [][]string{
		{"perf", "write", "--run_infinitely", "-e"},
		{"perf", "write", "--run_infinitely", "--lat"},
		{"perf", "send", "--run_infinitely", "-b"},
		{"perf", "write", "-W", "counters/x,,y"},
		{"perf", "write", "-W", "../../../etc/shadow"},
		{"perf", "send", "-X", "0"},
		{"perf", "send", "-e", "-X", "2049"},
		{"perf", "send", "-e", "-X", "-1"},
	} {
		_, stderr, code := cmdtest.Run(t, NewCmd, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want %d and one line", args, code, stderr, cmdutil.ExitUsage)
		}
	}
}

// badRunDeltas keeps the port's bad-run counters, each name once (the
// first source), ordered by category, without traffic counters.
func TestBadRunDeltas(t *testing.T) {
	rep := &inventory.RateReport{Rates: []inventory.Rate{
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 1, Source: "hw_counters", Name: "sent_pkts"}, Delta: 900},
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 1, Source: "hw_counters", Name: "rcvd_seq_err"}, Delta: 4},
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 1, Source: "hw_counters", Name: "completer_retry_err"}, Delta: 7},
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 1, Source: "netlink", Name: "completer_retry_err"}, Delta: 7},
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 1, Source: "hw_counters", Name: "send_err"}},
		{CounterKey: inventory.CounterKey{Dev: "rxe1", Port: 0, Source: "hw_counters", Name: "rcvd_rnr_err"}, Delta: 1},
	}}
	got := badRunDeltas(rep, 1)
	var names []string
	for _, d := range got {
		names = append(names, d.Category+":"+d.Counter+"@"+d.Source)
	}
	want := "retransmissions:completer_retry_err@hw_counters out_of_sequence:rcvd_seq_err@hw_counters errors:send_err@hw_counters"
	if strings.Join(names, " ") != want {
		t.Fatalf("got %v\nwant %s", names, want)
	}
	if got[0].Delta != 7 || got[0].Unit != "count" {
		t.Fatalf("%+v", got[0])
	}
}
