// Command tracelat reads the traces that scripts/trace-lat.sh keeps and
// prints, per interval of a message's way through rxe, each tool's median
// and the ratio rdmactl/perftest within the runs (see the script).
//
//	go run ./scripts/tracelat DIR
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The events of one message, in the order the sender's vCPU meets them.
var steps = []string{"write", "post", "rxe_requester", "copy_out", "rxe_xmit_packet", "rxe_udp_encap_recv", "rxe_rcv", "rxe_responder", "copy_in"}

// intervals: "user", then one per pair of consecutive steps, then "kern".
func intervals() []string {
	iv := []string{"user"}
	for i := 1; i < len(steps); i++ {
		iv = append(iv, steps[i-1]+" > "+steps[i])
	}
	return append(iv, "kern")
}

// event is one trace line: "COMM-PID [CPU] FLAGS TSC: NAME: ARGS".
type event struct {
	comm string
	pid  int
	tsc  uint64
	name string // a step, or "" for lines we do not use
}

var lineRE = regexp.MustCompile(`^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+(\d+):\s+(\w+):(.*)$`)

func parseLine(s string) (event, bool) {
	m := lineRE.FindStringSubmatch(s)
	if m == nil {
		return event{}, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return event{}, false
	}
	tsc, err := strconv.ParseUint(m[3], 10, 64)
	if err != nil {
		return event{}, false
	}
	e := event{comm: strings.TrimSpace(m[1]), pid: pid, tsc: tsc}
	switch name := m[4]; name {
	case "sys_enter":
		e.name = "write"
	case "mrcopy":
		if strings.Contains(m[5], "dir=0") {
			e.name = "copy_in"
		} else {
			e.name = "copy_out"
		}
	default:
		e.name = name
	}
	return e, true
}

// tool names a sender by its command.
func tool(comm string) string {
	if strings.HasPrefix(comm, "ib_write_lat") {
		return "perftest"
	}
	return "rdmactl"
}

// messages splits one run's events into messages and returns, per tool,
// per interval, the durations in ns. A message starts at its sender's
// write(2) and ends when its payload lands (copy_in); it counts only if
// every step came, in order, from the sender's own context. "user" is
// from the peer's last landing to this write.
func messages(evs []event, mhz float64) map[string]map[string][]float64 {
	out := map[string]map[string][]float64{}
	add := func(t, iv string, d uint64) {
		if out[t] == nil {
			out[t] = map[string][]float64{}
		}
		out[t][iv] = append(out[t][iv], float64(d)*1000/mhz)
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		switch {
		case a.tsc < b.tsc:
			return -1
		case a.tsc > b.tsc:
			return 1
		}
		return 0
	})
	var cur map[string]uint64
	var curPID int
	var curComm string
	landed := map[int]uint64{} // pid -> when its last message landed
	for _, e := range evs {
		if e.name == "write" {
			cur, curPID, curComm = map[string]uint64{"write": e.tsc}, e.pid, e.comm
			continue
		}
		if cur == nil || e.pid != curPID || !slices.Contains(steps, e.name) {
			continue
		}
		if _, seen := cur[e.name]; seen {
			continue // a step's first occurrence counts
		}
		cur[e.name] = e.tsc
		if e.name != "copy_in" {
			continue
		}
		complete := true
		for i, s := range steps {
			t, ok := cur[s]
			if !ok || (i > 0 && t < cur[steps[i-1]]) {
				complete = false
			}
		}
		if complete {
			t := tool(curComm)
			for i := 1; i < len(steps); i++ {
				add(t, steps[i-1]+" > "+steps[i], cur[steps[i]]-cur[steps[i-1]])
			}
			add(t, "kern", cur["copy_in"]-cur["post"])
			var peer uint64
			for pid, at := range landed {
				if pid != curPID && at > peer && at < cur["write"] {
					peer = at
				}
			}
			if peer != 0 {
				add(t, "user", cur["write"]-peer)
			}
		}
		landed[curPID] = e.tsc
		cur = nil
	}
	return out
}

func readTrace(r io.Reader) ([]event, error) {
	var evs []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if e, ok := parseLine(sc.Text()); ok && e.name != "" {
			evs = append(evs, e)
		}
	}
	return evs, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// gmean returns the geometric mean of ratios and its 95% CI (t
// distribution on the logs; two-sided, df = n-1, for small n).
func gmean(r []float64) (g, lo, hi float64) {
	n := len(r)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	var sum float64
	for _, x := range r {
		sum += math.Log(x)
	}
	m := sum / float64(n)
	if n < 2 {
		return math.Exp(m), math.NaN(), math.NaN()
	}
	var ss float64
	for _, x := range r {
		ss += (math.Log(x) - m) * (math.Log(x) - m)
	}
	se := math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	h := tq(n-1) * se
	return math.Exp(m), math.Exp(m - h), math.Exp(m + h)
}

// tq is the 97.5% quantile of Student's t with df degrees of freedom.
func tq(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	if df <= len(table) {
		return table[df-1]
	}
	if df <= 30 {
		return 2.06
	}
	return 1.96
}

// both is the square root of the two pairings' geometric means, and its
// 95% CI: which tool had which role and vCPU cancels out. (On the logs:
// the mean of the two means, with the variance of each mean summed and
// quartered; t with the smaller pairing's degrees of freedom.)
func both(a, b []float64) (g, lo, hi float64) {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	meanVar := func(v []float64) (m, vm float64) {
		for _, x := range v {
			m += math.Log(x)
		}
		m /= float64(len(v))
		for _, x := range v {
			vm += (math.Log(x) - m) * (math.Log(x) - m)
		}
		return m, vm / float64(len(v)-1) / float64(len(v))
	}
	ma, va := meanVar(a)
	mb, vb := meanVar(b)
	m, se := (ma+mb)/2, math.Sqrt(va+vb)/2
	h := tq(min(len(a), len(b))-1) * se
	return math.Exp(m), math.Exp(m - h), math.Exp(m + h)
}

// run is one traced pair: its pairing ("rs": rdmactl server, "pc":
// perftest server), round and per-tool medians per interval.
type run struct {
	pairing string
	round   int
	med     map[string]map[string]float64
}

func load(dir string) ([]run, float64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "tsc"))
	if err != nil {
		return nil, 0, fmt.Errorf("%w (the guest's TSC frequency)", err)
	}
	mhz, err := strconv.ParseFloat(strings.Fields(string(b) + " x")[0], 64)
	if err != nil || mhz <= 0 {
		return nil, 0, fmt.Errorf("%s/tsc: %q is not a frequency in MHz", dir, strings.TrimSpace(string(b)))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.trace"))
	var runs []run
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".trace")
		pairing, rs, ok := strings.Cut(name, "-")
		round, err := strconv.Atoi(rs)
		if !ok || err != nil {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			return nil, 0, err
		}
		evs, err := readTrace(fh)
		fh.Close()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", f, err)
		}
		ru := run{pairing: pairing, round: round, med: map[string]map[string]float64{}}
		for t, ivs := range messages(evs, mhz) {
			ru.med[t] = map[string]float64{}
			for iv, d := range ivs {
				ru.med[t][iv] = median(d)
			}
		}
		runs = append(runs, ru)
	}
	return runs, mhz, nil
}

func report(w io.Writer, runs []run) {
	ratio := func(r run, iv string) (float64, bool) {
		p, m := r.med["perftest"][iv], r.med["rdmactl"][iv]
		if p > 0 && m > 0 {
			return m / p, true
		}
		return 0, false
	}
	fmt.Fprintf(w, "%-40s %9s %9s   %-22s %-22s %-22s\n", "interval (ns, medians)", "perftest", "rdmactl", "rdmactl srv/perftest", "perftest srv/rdmactl", "both")
	for _, iv := range intervals() {
		var pv, mv []float64
		byPair := map[string][]float64{}
		for _, r := range runs {
			pv = append(pv, r.med["perftest"][iv])
			mv = append(mv, r.med["rdmactl"][iv])
			if x, ok := ratio(r, iv); ok {
				byPair[r.pairing] = append(byPair[r.pairing], x)
			}
		}
		cell := func(v []float64) string {
			g, lo, hi := gmean(v)
			return fmt.Sprintf("%.3f (%.2f-%.2f)", g, lo, hi)
		}
		g, lo, hi := both(byPair["rs"], byPair["pc"])
		fmt.Fprintf(w, "%-40s %9.0f %9.0f   %-22s %-22s %-22s\n", iv, median(pv), median(mv), cell(byPair["rs"]), cell(byPair["pc"]),
			fmt.Sprintf("%.3f (%.2f-%.2f)", g, lo, hi))
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tracelat DIR (the traces of scripts/trace-lat.sh)")
		os.Exit(2)
	}
	runs, mhz, err := load(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracelat:", err)
		os.Exit(1)
	}
	if len(runs) == 0 {
		fmt.Fprintf(os.Stderr, "tracelat: no traces in %s\n", os.Args[1])
		os.Exit(1)
	}
	fmt.Printf("2-byte write_lat, rdmactl and ib_write_lat in one pair, TSC %.1f MHz\n\nall %d runs:\n", mhz, len(runs))
	report(os.Stdout, runs)
	fast := fastRuns(runs, fastBand)
	fmt.Printf("\n%d runs in which both vCPUs ran fast (both tools' kern within %.2f times the fastest):\n", len(fast), fastBand)
	report(os.Stdout, fast)
}

// fastBand: see fastRuns.
const fastBand = 1.25

// fastRuns keeps the runs in which both tools' median kern is at most
// band times the smallest in runs. The emulator's slow spells hit one
// vCPU at a time (traced: one tool's messages at twice the other's in
// the same run), so a run's ratio compares the tools only when both
// vCPUs ran at full speed.
func fastRuns(runs []run, band float64) []run {
	least := math.Inf(1)
	for _, r := range runs {
		for _, t := range []string{"perftest", "rdmactl"} {
			if k := r.med[t]["kern"]; k > 0 {
				least = min(least, k)
			}
		}
	}
	var out []run
	for _, r := range runs {
		p, m := r.med["perftest"]["kern"], r.med["rdmactl"]["kern"]
		if p > 0 && m > 0 && p <= band*least && m <= band*least {
			out = append(out, r)
		}
	}
	return out
}
