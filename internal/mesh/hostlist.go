// Package mesh is what a cluster-wide benchmark needs before any packet
// flows: who this process is among the job's ranks (from the job
// launcher's environment: Slurm, Open MPI, a Kubernetes Indexed Job, or a
// host file), and the schedule of pairs each round tests, so that no
// endpoint is in two tests at once. The job engine starts the processes;
// nothing here starts any.
package mesh

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxHosts bounds an expanded host list: far above any cluster, low
// enough that a hostile list cannot fill memory.
const MaxHosts = 1 << 20

// maxRange is the most names one lo-hi range may give: Slurm's own
// bound (MAX_RANGE in slurm src/common/hostlist.c), so that a range
// Slurm refuses is refused here too.
const maxRange = 64 * 1024

// ExpandHostlist expands a Slurm host list ("gpu[001-004,010],login1",
// "rack[1-2]-n[01-02]") into host names in Slurm's order, as `scontrol
// show hostnames` prints them (slurm src/common/hostlist.c): commas and
// white space outside brackets separate expressions, empty ones are
// skipped; a bracket holds numbers and lo-hi ranges separated by commas;
// a range's numbers are as wide as its lo is written ("[01-10]" gives
// 01..10, "[1-10]" 1..10); several bracket groups in one name expand as
// nested loops, the first outermost, and nothing may follow the last
// group ("n[1-2]-ib" is not a Slurm host list). Duplicates are kept, as
// Slurm keeps them. Whatever this accepts, scontrol expands the same way;
// some malformed lists scontrol reads its own way ("n[ 1-2]", numbers
// past 2^64) are refused here.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for _, expr := range splitTop(s) {
		if expr == "" {
			continue
		}
		names, err := expandOne(expr, len(out))
		if err != nil {
			return nil, fmt.Errorf("host list %q: %w", s, err)
		}
		out = append(out, names...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("host list %q: no host names", s)
	}
	return out, nil
}

// splitTop splits s at the commas and white space outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',', ' ', '\t', '\n':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expandOne expands one expression; have is how many names came before
// (for MaxHosts).
func expandOne(expr string, have int) ([]string, error) {
	open := strings.IndexByte(expr, '[')
	if open < 0 {
		if strings.ContainsAny(expr, "]") {
			return nil, fmt.Errorf("%q: ']' without '['", expr)
		}
		return []string{expr}, nil
	}
	end := strings.IndexByte(expr[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", expr)
	}
	end += open
	prefix, body, rest := expr[:open], expr[open+1:end], expr[end+1:]
	if strings.ContainsAny(prefix, "]") || strings.Contains(body, "[") {
		return nil, fmt.Errorf("%q: brackets do not nest", expr)
	}
	if rest != "" && !strings.Contains(rest, "[") {
		return nil, fmt.Errorf("%q: text after the last ']' (a Slurm host list ends with its bracket group)", expr)
	}
	nums, err := expandRanges(body, have)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", expr, err)
	}
	tails := []string{""}
	if rest != "" {
		if tails, err = expandOne(rest, have); err != nil {
			return nil, err
		}
	}
	if have+len(nums)*len(tails) > MaxHosts {
		return nil, fmt.Errorf("%q: more than %d hosts", expr, MaxHosts)
	}
	out := make([]string, 0, len(nums)*len(tails))
	for _, n := range nums {
		for _, t := range tails {
			out = append(out, prefix+n+t)
		}
	}
	return out, nil
}

// expandRanges expands "001-004,010" into the numbers as written.
func expandRanges(body string, have int) ([]string, error) {
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !digits(lo) || isRange && !digits(hi) {
			return nil, fmt.Errorf("%q: want numbers or lo-hi ranges in brackets", r)
		}
		l, err1 := strconv.ParseUint(lo, 10, 64)
		h := l
		var err2 error
		if isRange {
			h, err2 = strconv.ParseUint(hi, 10, 64)
		}
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: number too large", r)
		}
		if h < l {
			return nil, fmt.Errorf("%q: the range goes down", r)
		}
		if h-l >= maxRange {
			return nil, fmt.Errorf("%q: more than %d hosts in one range", r, maxRange)
		}
		if uint64(have+len(out))+h-l+1 > MaxHosts {
			return nil, fmt.Errorf("%q: more than %d hosts", r, MaxHosts)
		}
		for v := l; ; v++ {
			out = append(out, fmt.Sprintf("%0*d", len(lo), v))
			if v == h {
				break
			}
		}
	}
	return out, nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ExpandTasksPerNode expands Slurm's SLURM_STEP_TASKS_PER_NODE ("2(x3),1":
// 2 tasks on each of 3 nodes, then 1) into one count a node.
func ExpandTasksPerNode(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, rep := part, "1"
		if i := strings.Index(part, "(x"); i >= 0 && strings.HasSuffix(part, ")") {
			n, rep = part[:i], part[i+2:len(part)-1]
		}
		tasks, err1 := strconv.Atoi(n)
		times, err2 := strconv.Atoi(rep)
		if err1 != nil || err2 != nil || tasks < 0 || times < 1 || len(out)+times > MaxHosts {
			return nil, fmt.Errorf("tasks per node %q: want counts such as 2(x3),1", s)
		}
		for range times {
			out = append(out, tasks)
		}
	}
	return out, nil
}
