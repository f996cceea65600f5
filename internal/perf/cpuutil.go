package perf

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// --cpu_util (perftest's cpu_util_data, duration mode only): the share of
// the machine's CPU time spent in user mode while the measured window
// ran, from /proc/stat's first line ("cpu  user nice system idle ...")
// read when the window opens and when it closes. perftest's get_cpu_stats
// (src/perftest_resources.c) takes the user and idle fields only and
// calc_cpu_util (src/perftest_parameters.c) reports
// (float)Δuser / (Δuser + Δidle) * 100; rdmactl does the same. perftest
// reads them in its SIGALRM handler at the window's edges; rdmactl's
// loops never leave their loop for that, so a timer goroutine reads them
// a margin after the loop starts and when the window closes, a margin
// before -D ends or when the loop ends, whichever comes first (for a send
// receiver, whose window opens a margin after the first message, up to
// the start handshake's skew earlier). A side that ran no loop (a write
// or read server, which prints the client's figures) prints 0.00, as
// perftest's.

// procStat is the file get_cpu_stats reads (perftest's CPU_UTILITY).
const procStat = "/proc/stat"

// readCPUStat returns the user and idle fields of /proc/stat's "cpu"
// line (USER_HZ ticks).
func readCPUStat() (user, idle int64, err error) {
	f, err := os.Open(procStat)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, 0, err
	}
	return parseCPUStat(line)
}

func parseCPUStat(line string) (user, idle int64, err error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("%s: first line %q is not the cpu line", procStat, strings.TrimSpace(line))
	}
	if user, err = strconv.ParseInt(f[1], 10, 64); err == nil {
		idle, err = strconv.ParseInt(f[4], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", procStat, err)
	}
	return user, idle, nil
}

// cpuUtil is calc_cpu_util, in its float precision.
func cpuUtil(u0, i0, u1, i1 int64) float64 {
	du, di := u1-u0, i1-i0
	if du+di == 0 {
		return 0
	}
	return float64(float32(du) / float32(du+di) * 100)
}

// cpuSampler reads the two samples of one measurement on a timer.
type cpuSampler struct {
	quit chan struct{}
	done chan struct{}
	pct  *float64
	err  error
}

// startCPUSampler starts the timer for a -D window [margin, duration -
// margin) from now; read is readCPUStat (a test's reader in tests).
func startCPUSampler(margin, duration time.Duration, read func() (int64, int64, error)) *cpuSampler {
	c := &cpuSampler{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		start := time.Now()
		var u, i [2]int64
		for k, at := range []time.Duration{margin, duration - margin} {
			t := time.NewTimer(time.Until(start.Add(at)))
			select {
			case <-c.quit:
				t.Stop()
				if k == 0 {
					return // the loop ended before the window opened
				}
				// The window closes with the loop: a bandwidth
				// loop ends when its window closes (or on Ctrl-C).
			case <-t.C:
			}
			var err error
			if u[k], i[k], err = read(); err != nil {
				c.err = fmt.Errorf("--cpu_util: %w", err)
				return
			}
		}
		v := cpuUtil(u[0], i[0], u[1], i[1])
		c.pct = &v
	}()
	return c
}

// stop ends the timer when the loop has ended and returns the figure:
// the second sample is read now if its time has not come (the loop ended
// with its window, or was interrupted); nil when the loop ended before
// the window opened.
func (c *cpuSampler) stop() (*float64, error) {
	close(c.quit)
	<-c.done
	return c.pct, c.err
}

// validateCPUUtil is Validate for --cpu_util (without -D, Session.Run
// warns and drops it, as perftest).
func (p *Params) validateCPUUtil() error {
	switch {
	case !p.Report.CPUUtil:
		return nil
	case p.RunInfinitely:
		return errors.New("--cpu_util: --run_infinitely has no measured window to sample (perftest reports 0)")
	}
	return nil
}

// cpuRowEnd is REPORT_EXT, or REPORT_EXT_CPU_UTIL with --cpu_util, for a
// report row (row ends in "\n"): this side's figure, whoever's row it is
// (perftest's calc_cpu_util reads user_param, not the report).
func (s *Session) cpuRowEnd(row string) string {
	if !s.P.Report.CPUUtil {
		return row
	}
	pct := 0.0
	if v := s.result.CPUUtil; v != nil {
		pct = *v
	}
	return strings.TrimSuffix(row, "\n") + fmt.Sprintf("\t    %-3.2f\n", pct)
}

// cpuHeaderEnd is RESULT_EXT, or RESULT_EXT_CPU_UTIL with --cpu_util,
// for a table header (header ends in "\n").
func (s *Session) cpuHeaderEnd(header string) string {
	if !s.P.Report.CPUUtil {
		return header
	}
	return strings.TrimSuffix(header, "\n") + "    CPU_Util[%]\n"
}
