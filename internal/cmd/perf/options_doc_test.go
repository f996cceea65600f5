package perf

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// optionRow is one row of docs/perftest-options.md.
type optionRow struct {
	long, short string
	arg         bool   // perftest takes a value
	status      string // "yes...", or a refusal ending in "(exit N)"
	provedBy    string
}

const optionsDoc = "../../../docs/perftest-options.md"

func readOptionsDoc(t *testing.T) (rows []optionRow, summary string) {
	t.Helper()
	b, err := os.ReadFile(optionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	rowRE := regexp.MustCompile("^\\| `--([^`]+)` \\| ([^|]*)\\| (value|—) \\| [^|]*\\| ([^|]*)\\| ([^|]*)\\|$")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `--") {
			m := rowRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%s: a row not in the table's form: %q", optionsDoc, line)
			}
			r := optionRow{long: m[1], arg: m[3] == "value", status: strings.TrimSpace(m[4]), provedBy: strings.TrimSpace(m[5])}
			// A letter perftest's getopt string has: "`-X`" alone
			// ("(`-Y` in usage)" is only in perftest's usage text).
			if s := strings.TrimSpace(m[2]); len(s) == 4 && s[0] == '`' && s[1] == '-' {
				r.short = s[2:3]
			}
			rows = append(rows, r)
		}
		if strings.Contains(line, " accepted.") {
			summary = line
		}
	}
	return rows, summary
}

// perfTests are the eight tests: ib_{send,write,read,atomic}_{bw,lat}.
var perfTests = []struct {
	verb perf.Verb
	lat  bool
}{
	{perf.VerbSend, false}, {perf.VerbSend, true}, {perf.VerbWrite, false}, {perf.VerbWrite, true},
	{perf.VerbRead, false}, {perf.VerbRead, true}, {perf.VerbAtomic, false}, {perf.VerbAtomic, true},
}

// acceptedValues are values an accepted option takes (default "1").
var acceptedValues = map[string]string{
	"ib-dev": "rxe0", "mtu": "1024", "size": "8", "tx-depth": "64", "connection": "RC", "inline_size": "0",
	"atomic_type": "CMP_AND_SWAP", "tos": "32", "tclass": "32", "report-counters": "counters/port_xmit_data",
	"rx-depth": "64", "pkey_index": "0", "port": "18516", "iters": "100", "post_list": "2", "output": "bandwidth", "rate_limit_type": "SW", "rate_units": "M", "numa_node": "0", "force-link": "Ethernet",
	"mmap": "options_doc_test.go", "mmap-offset": "4096", // a regular file that exists
	"payload_file_path": "testdata/payload.txt", "recv_post_list": "2", "MGID": "ff02::1",
	"tph_mem": "pm", "cpu_id": "0", "ph": "0",
}

// acceptedWith are the other options an accepted option needs.
var acceptedWith = map[string][]string{"report-both": {"-b"}, "connectionless": {"-g", "--run_infinitely"}, "out_json_file": {"--out_json"}, "cpu_util": {"-D", "3"}, "margin": {"-D", "3"}, "latency_gap": {"--lat"}, "vector": {"-e"}, "rate_limit": {"--rate_limit_type", "SW"}, "rate_limit_type": {"--rate_limit", "1"}, "burst_size": {"--rate_limit", "1", "--rate_limit_type", "SW"}, "rate_units": {"--rate_limit", "1000", "--rate_limit_type", "SW"}, "mmap-offset": {"--mmap", "options_doc_test.go"},
	"report-per-port": {"-O", "-D", "3"}, "tph_mem": {"--cpu_id", "0", "--ph", "0"}, "cpu_id": {"--tph_mem", "pm", "--ph", "0"}}

// acceptedAsServer are the accepted options that a server only takes.
var acceptedAsServer = map[string]bool{"connectionless": true}

func optionArgs(lat bool, flag string, arg bool, value string, host bool) []string {
	var a []string
	if lat {
		a = append(a, "--lat")
	}
	a = append(a, flag)
	if arg {
		a = append(a, value)
	}
	if host {
		a = append(a, "10.0.0.1")
	}
	return a
}

// TestPerftestOptionsDoc: for every option in docs/perftest-options.md,
// rdmactl perf's parser does what the doc says. An accepted option parses
// with perftest's argument kind (long and short form) in at least one of
// the eight tests; a refused one is refused in every test, in both forms,
// with the documented exit code and one line naming the option, by the
// parser (so before any device is opened), without its value being taken
// for the server's address.
func TestPerftestOptionsDoc(t *testing.T) {
	rows, summary := readOptionsDoc(t)
	if len(rows) != 152 { // long_options[] of perftest 6.29
		t.Fatalf("%s has %d option rows, want perftest 6.29's 152", optionsDoc, len(rows))
	}
	exitRE := regexp.MustCompile(`\(exit (\d)\)$`)
	documented := map[string]bool{}
	yes := 0
	for _, r := range rows {
		documented[r.long] = true
		forms := []string{"--" + r.long}
		if r.short != "" {
			forms = append(forms, "-"+r.short)
		}
		if strings.HasPrefix(r.status, "on the device") {
			// Parsed, and left for the device check (needs.go).
			for _, form := range forms {
				args := append(slices.Clone(acceptedWith[r.long]), optionArgs(false, form, r.arg, acceptedValues[r.long], true)...)
				f, err := parsePerfArgs(perf.VerbWrite, args)
				if err != nil || !f.needs.Any() {
					t.Errorf("%v: %v, needs %+v; want it parsed and left for the device", args, err, f.needs)
				}
			}
			continue
		}
		if strings.HasPrefix(r.status, "yes") {
			yes++
			val := acceptedValues[r.long]
			if val == "" {
				val = "1"
			}
			for _, form := range forms {
				ok := false
				var errs []string
				for _, pt := range perfTests {
					fs := perfFlagSet(&perfFlags{}, pt.verb)
					fl := fs.Lookup(r.long)
					if form != "--"+r.long {
						fl = fs.ShorthandLookup(r.short)
					}
					if fl == nil || fl.Hidden {
						continue
					}
					if (fl.NoOptDefVal == "") != r.arg {
						t.Errorf("%s: takes a value: rdmactl %v, perftest %v", form, fl.NoOptDefVal == "", r.arg)
					}
					_, err := parsePerfArgs(pt.verb, append(slices.Clone(acceptedWith[r.long]), optionArgs(pt.lat, form, r.arg, val, !acceptedAsServer[r.long])...))
					if err == nil {
						ok = true
						break
					}
					errs = append(errs, err.Error())
				}
				if !ok {
					t.Errorf("%s is documented as accepted, but no test takes it: %q", form, errs)
				}
			}
			continue
		}
		m := exitRE.FindStringSubmatch(r.status)
		if m == nil {
			t.Errorf("--%s: status %q is neither yes nor ends in (exit N)", r.long, r.status)
			continue
		}
		want, _ := strconv.Atoi(m[1])
		if r.provedBy != "TestPerftestOptionsDoc" {
			t.Errorf("--%s: a refusal is proved by TestPerftestOptionsDoc, not %q", r.long, r.provedBy)
		}
		for _, form := range forms {
			for _, pt := range perfTests {
				args := optionArgs(pt.lat, form, r.arg, "x", true)
				_, err := parsePerfArgs(pt.verb, args)
				code, msg := cmdutil.ExitStatus(err)
				if code != want || !strings.Contains(msg, "--"+r.long+": ") || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s %v: exit %d %q; want exit %d, one line naming --%s", pt.verb, args, code, msg, want, r.long)
				}
				if strings.Contains(msg, "unknown") {
					t.Errorf("%v: %q", args, msg)
				}
			}
			// The whole command: nothing on stdout, one line on stderr.
			args := append([]string{"perf", "write"}, optionArgs(false, form, r.arg, "x", true)...)
			out, stderr, code := cmdtest.Run(t, NewCmd, args...)
			if code != want || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--"+r.long) {
				t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, stderr)
			}
		}
		// perftest's argument kind: a valueless option leaves the next
		// word alone, one with a value takes it.
		fs := perfFlagSet(&perfFlags{}, perf.VerbWrite)
		if fl := fs.Lookup(r.long); fl == nil || (fl.NoOptDefVal == "") != r.arg {
			t.Errorf("--%s: registered %v, want takes a value = %v", r.long, fl, r.arg)
		}
	}
	if want := strconv.Itoa(yes) + " of " + strconv.Itoa(len(rows)) + " accepted."; summary != want {
		t.Errorf("%s says %q, its rows %q", optionsDoc, summary, want)
	}
	for _, list := range [][]refusal{refusals, otherTests} {
		for _, r := range list {
			if !documented[r.long] {
				t.Errorf("--%s is refused but not in %s", r.long, optionsDoc)
			}
		}
	}
}

// TestPerftestOptionsProvedBy: every test a row names exists.
func TestPerftestOptionsProvedBy(t *testing.T) {
	rows, _ := readOptionsDoc(t)
	var src strings.Builder
	for _, dir := range []string{".", "../../perf", "../../verbs", "../../placement", "../../../cmd/rdmactl"} {
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src.Write(b)
		}
	}
	all := src.String()
	nameRE := regexp.MustCompile(`Test\w+`)
	for _, r := range rows {
		names := nameRE.FindAllString(r.provedBy, -1)
		if len(names) == 0 {
			t.Errorf("--%s: no test named in %q", r.long, r.provedBy)
		}
		for _, n := range names {
			if !strings.Contains(all, "func "+n+"(") {
				t.Errorf("--%s: %s names %s, which does not exist", r.long, optionsDoc, n)
			}
		}
	}
}

// TestPerftestRefusalOrder: with several refused options, the line names
// the first on the command line; a refusal wins over a later bad value.
func TestPerftestRefusalOrder(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--use_cuda", "0", "-O", "h"}, "--use_cuda: "},
		{[]string{"-C", "--use_cuda=0", "h"}, "-C/--report-cycles: "},
		{[]string{"--aes_xts", "-n", "zz", "h"}, "--aes_xts: "},
		{[]string{"-s", "4K", "--source_ip", "1.2.3.4", "h"}, "--source_ip: "},
	} {
		_, err := parsePerfArgs(perf.VerbWrite, c.args)
		if _, msg := cmdutil.ExitStatus(err); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%q: %q, want it to start with %q", c.args, msg, c.want)
		}
	}
	// rdmactl's -j stays --json (perftest's -j is --source_ip).
	f, err := parsePerfArgs(perf.VerbWrite, []string{"-j", "h"})
	if err != nil || !f.json {
		t.Fatalf("-j: %v %+v", err, f)
	}
}

// TestTransportRefusals: perftest's -c values that rdmactl perf lacks are
// refused by name in one line: exit 5 for a vendor's transport, 2 for
// the rest.
func TestTransportRefusals(t *testing.T) {
	for _, c := range []struct {
		conn string
		code int
		want string
	}{
		{"DC", cmdutil.ExitUnsupported, "-c DC: the DC transport needs the mlx5dv extension"},
		{"SRD", cmdutil.ExitUnsupported, "-c SRD: the SRD transport needs the efadv extension"},
		{"RawEth", cmdutil.ExitUsage, "-c RawEth: a raw Ethernet option"},
		{"QQ", cmdutil.ExitUsage, `unknown connection type "QQ"`},
	} {
		_, stderr, code := cmdtest.Run(t, NewCmd, "perf", "send", "-c", c.conn, "10.77.0.1")
		if code != c.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("-c %s: exit %d %q, want %d and %q", c.conn, code, stderr, c.code, c.want)
		}
	}
}

// TestDeviceNeedFlags: -c XRC, -O, --report-per-port and the TPH options
// are parsed with perftest's checks and left for the device; what
// perftest refuses while parsing is refused here too, exit 2, in one
// line.
func TestDeviceNeedFlags(t *testing.T) {
	for _, c := range []struct {
		args  []string
		needs perf.DeviceNeeds
		want  string // the refusal, "" when parsed
	}{
		{[]string{"-c", "XRC", "h"}, perf.DeviceNeeds{XRC: true}, ""},
		{[]string{"-c", "xrc"}, perf.DeviceNeeds{XRC: true}, ""},
		{[]string{"-c", "XRC", "-R", "h"}, perf.DeviceNeeds{}, "-c XRC: XRC does not support RDMA_CM"},
		{[]string{"-O", "h"}, perf.DeviceNeeds{DualPort: true}, ""},
		{[]string{"--dualport", "-D", "2", "--report-per-port"}, perf.DeviceNeeds{DualPort: true}, ""},
		{[]string{"-O", "--lat", "h"}, perf.DeviceNeeds{}, "dual-port mode only supports bandwidth tests"},
		{[]string{"-O", "-R", "h"}, perf.DeviceNeeds{}, "-O with -R: rdmactl perf does not run it"},
		{[]string{"--report-per-port", "-O", "h"}, perf.DeviceNeeds{}, "--report-per-port: works only with -D and -O"},
		{[]string{"--report-per-port", "-D", "2", "h"}, perf.DeviceNeeds{}, "--report-per-port: works only with -D and -O"},
		{[]string{"--ph", "2", "h"}, perf.DeviceNeeds{TPH: true}, ""},
		{[]string{"--tph_mem", "VOLATILE", "--cpu_id", "3", "--ph", "0", "h"}, perf.DeviceNeeds{TPH: true}, ""},
		{[]string{"--tph_mem", "nv", "--cpu_id", "3", "--ph", "0", "h"}, perf.DeviceNeeds{}, `--tph_mem "nv": volatile (vm) or persistent (pm)`},
		{[]string{"--tph_mem", "pm", "--ph", "0", "h"}, perf.DeviceNeeds{}, "--tph_mem: needs --cpu_id"},
		{[]string{"--cpu_id", "1", "--ph", "0", "h"}, perf.DeviceNeeds{}, "--cpu_id: needs --tph_mem"},
		{[]string{"--tph_mem", "pm", "--cpu_id", "1", "h"}, perf.DeviceNeeds{}, "need --ph"},
		{[]string{"--ph", "4", "h"}, perf.DeviceNeeds{}, "--ph 4: a processing hint from 0 to 3"},
		{[]string{"--cpu_id", "-2", "--tph_mem", "pm", "--ph", "1", "h"}, perf.DeviceNeeds{}, "--cpu_id -2: a CPU number"},
		{[]string{"--ph", "1", "-R", "h"}, perf.DeviceNeeds{}, "--ph with -R"},
	} {
		f, err := parsePerfArgs(perf.VerbWrite, c.args)
		if c.want == "" {
			if err != nil || f.needs != c.needs {
				t.Errorf("%q: %v, needs %+v; want %+v", c.args, err, f.needs, c.needs)
			}
			continue
		}
		code, msg := cmdutil.ExitStatus(err)
		if code != cmdutil.ExitUsage || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
			t.Errorf("%q: exit %d %q, want exit 2 and %q", c.args, code, msg, c.want)
		}
	}
	// -O in a test without bandwidth mode is refused in every verb.
	if _, err := parsePerfArgs(perf.VerbSend, []string{"-O", "-g", "h"}); err == nil || !strings.Contains(err.Error(), "not supported with multicast") {
		t.Errorf("-O -g: %v", err)
	}
}
