package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Counters over a run, two ways:
//   - -W (perftest's --report-counters): files under the port's sysfs
//     directory, read when the run starts and after each result row,
//     printed as perftest's counters_print does ("\tNAME=DELTA" per
//     counter, then an empty line), each the change since the last print.
//   - --counters (beyond perftest): the change over the run of the port's
//     counters whose category explains a bad run (vocab's retransmissions,
//     out_of_sequence, congestion, rnr, errors, discards), from the
//     inventory's counter snapshots; a CounterWatch (cmd/rdmactl's, over
//     the inventory) reads them, perf prints them after the results.

// sysfsIB is where -W's files are, as perftest's COUNTER_PATH
// (Session.SysfsIB for another root).
const sysfsIB = "/sys/class/infiniband"

// checkCounterPath accepts a -W name: a relative path under the port's
// directory (perftest resolves it and refuses what leaves the directory).
func checkCounterPath(name string) error {
	switch {
	case name == "":
		return errors.New("-W: empty counter name (want e.g. counters/port_xmit_data,hw_counters/out_of_sequence)")
	case strings.HasPrefix(name, "/") || filepath.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.ContainsRune(name, 0):
		return fmt.Errorf("-W %q: want a path under the port's sysfs directory, e.g. counters/port_xmit_data", name)
	}
	return nil
}

// ParseCounterList splits -W's comma-separated list.
func ParseCounterList(s string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if err := checkCounterPath(n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// parseCounterValue reads a sysfs counter file's text: a decimal number
// and a newline (hw_counters, counters/; strtoll in perftest).
func parseCounterValue(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a counter value: %.24q", s)
	}
	return v, nil
}

// CounterFileDelta is one -W counter's change (JSON: since the run's
// start).
type CounterFileDelta struct {
	Name  string `json:"name"`
	Delta uint64 `json:"delta"`
}

// counterFiles is -W's open files and their values.
type counterFiles struct {
	names       []string
	files       []*os.File
	first, last []uint64
}

func openCounterFiles(root, dev string, port int, names []string) (*counterFiles, error) {
	c := &counterFiles{names: names}
	dir := filepath.Join(root, dev, "ports", strconv.Itoa(port))
	for _, n := range names {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			c.close()
			return nil, fmt.Errorf("-W %s: no such counter in %s (see 'ls %s/counters %s/hw_counters')", n, dir, dir, dir)
		}
		c.files = append(c.files, f)
	}
	v, err := c.read()
	if err != nil {
		c.close()
		return nil, err
	}
	c.first, c.last = v, v
	return c, nil
}

func (c *counterFiles) read() ([]uint64, error) {
	out := make([]uint64, len(c.files))
	buf := make([]byte, 32)
	for i, f := range c.files {
		n, err := f.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("-W %s: %w", c.names[i], err)
		}
		if out[i], err = parseCounterValue(buf[:n]); err != nil {
			return nil, fmt.Errorf("-W %s: %w", c.names[i], err)
		}
	}
	return out, nil
}

// report reads the counters and renders perftest's lines with the
// change since the last report.
func (c *counterFiles) report() (string, error) {
	v, err := c.read()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, n := range c.names {
		fmt.Fprintf(&b, "\t%s=%d\n", n, v[i]-c.last[i])
	}
	b.WriteString("\n")
	c.last = v
	return b.String(), nil
}

// total is each counter's change since the run's start.
func (c *counterFiles) total() []CounterFileDelta {
	out := make([]CounterFileDelta, len(c.names))
	for i, n := range c.names {
		out[i] = CounterFileDelta{Name: n, Delta: c.last[i] - c.first[i]}
	}
	return out
}

func (c *counterFiles) close() {
	if c == nil {
		return
	}
	for _, f := range c.files {
		_ = f.Close()
	}
}

// CounterDelta is one counter's change over the run (--counters).
type CounterDelta struct {
	Dev      string `json:"ifname"`
	Port     uint32 `json:"port"`
	Source   string `json:"source"`
	Counter  string `json:"counter"`
	Category string `json:"category"`
	Unit     string `json:"unit"`
	Delta    uint64 `json:"delta"`
	// Reset: the counter went down during the run (cleared), Delta is
	// the count since.
	Reset bool `json:"reset,omitempty"`
}

// CounterWatch reads the run's port's counters when the run starts
// (Start) and their change at its end (Deltas), already filtered to the
// categories that explain a bad run.
type CounterWatch interface {
	Start() error
	Deltas() ([]CounterDelta, error)
}

// formatCounterDeltas is --counters' table after the results.
func formatCounterDeltas(dev string, port int, d []CounterDelta) string {
	var b strings.Builder
	fmt.Fprintf(&b, " Counter deltas over the run, %s/%d (retransmissions, out_of_sequence, congestion, rnr, errors, discards):\n", dev, port)
	if len(d) == 0 {
		b.WriteString(" (the port has no such counters)\n")
		return b.String()
	}
	fmt.Fprintf(&b, " %-16s %-28s %-12s %s\n", "CATEGORY", "COUNTER", "SOURCE", "DELTA")
	for _, c := range d {
		reset := ""
		if c.Reset {
			reset = " (reset during the run)"
		}
		fmt.Fprintf(&b, " %-16s %-28s %-12s %d%s\n", c.Category, c.Counter, c.Source, c.Delta, reset)
	}
	return b.String()
}

// openCounters opens -W's files (before the run, as perftest).
func (s *Session) openCounters() error {
	if len(s.P.ReportCounters) == 0 {
		return nil
	}
	root := s.SysfsIB
	if root == "" {
		root = sysfsIB
	}
	c, err := openCounterFiles(root, s.P.Device, s.P.IBPort, s.P.ReportCounters)
	if err != nil {
		return err
	}
	s.cfiles = c
	return nil
}

// reportCounterFiles prints -W's lines after a result row.
func (s *Session) reportCounterFiles() {
	if s.cfiles == nil {
		return
	}
	text, err := s.cfiles.report()
	if err != nil {
		s.printfAlways(" %v\n", err)
		return
	}
	s.printfAlways("%s", text) // perftest's counters_print ignores --output
	s.result.ReportCounters = s.cfiles.total()
}

// startCounters takes --counters' first snapshot. A failure is said in
// the results and does not stop the run.
func (s *Session) startCounters() {
	if !s.P.CounterDeltas || s.Counters == nil {
		return
	}
	if err := s.Counters.Start(); err != nil {
		s.printf(" --counters: %v\n", err)
		s.Counters = nil
	}
}

// finishCounters takes the last snapshot and prints the deltas.
func (s *Session) finishCounters() {
	if !s.P.CounterDeltas || s.Counters == nil {
		return
	}
	d, err := s.Counters.Deltas()
	if err != nil {
		s.printf(" --counters: %v\n", err)
		return
	}
	if d == nil {
		d = []CounterDelta{}
	}
	s.result.CounterDeltas = d
	s.printf("%s", formatCounterDeltas(s.P.Device, s.P.IBPort, d))
}
