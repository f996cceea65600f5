package exporter

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmactl/rdmactl/internal/promtext"
)

// The exporter's own go_ and process_ series, by the names client_golang's
// Go and process collectors give them, read from /proc/self and getrusage
// when scraped: the few that tell whether the exporter itself leaks or
// burns CPU, without linking client_golang and procfs into every command.
var (
	descGoroutines = promtext.MustDesc("go_goroutines", "Number of goroutines that currently exist.", promtext.Gauge)
	descGoInfo     = promtext.MustDesc("go_info", "Information about the Go environment.", promtext.Gauge, "version")
	descCPU        = promtext.MustDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", promtext.Counter)
	descRSS        = promtext.MustDesc("process_resident_memory_bytes", "Resident memory size in bytes.", promtext.Gauge)
	descVSZ        = promtext.MustDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", promtext.Gauge)
	descFDs        = promtext.MustDesc("process_open_fds", "Number of open file descriptors.", promtext.Gauge)
	descMaxFDs     = promtext.MustDesc("process_max_fds", "Maximum number of open file descriptors.", promtext.Gauge)
	descStart      = promtext.MustDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", promtext.Gauge)
)

// GoMetrics are go_goroutines and go_info.
func GoMetrics() []promtext.Metric {
	return []promtext.Metric{
		{Desc: descGoroutines, Value: float64(runtime.NumGoroutine())},
		{Desc: descGoInfo, Values: []string{runtime.Version()}, Value: 1},
	}
}

// ProcessMetrics are the process_ series of this process; one that cannot
// be read is left out. start is when the process started.
func ProcessMetrics(start time.Time) []promtext.Metric {
	ms := []promtext.Metric{{Desc: descStart, Value: float64(start.UnixNano()) / 1e9}}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		ms = append(ms, promtext.Metric{Desc: descCPU, Value: cpu.Seconds()})
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if vsz, rss, err := ParseStatm(string(b), os.Getpagesize()); err == nil {
			ms = append(ms, promtext.Metric{Desc: descVSZ, Value: float64(vsz)}, promtext.Metric{Desc: descRSS, Value: float64(rss)})
		}
	}
	if f, err := os.Open("/proc/self/fd"); err == nil {
		names, err := f.Readdirnames(-1)
		f.Close()
		if err == nil {
			ms = append(ms, promtext.Metric{Desc: descFDs, Value: float64(len(names) - 1)}) // less the one reading
		}
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil {
		ms = append(ms, promtext.Metric{Desc: descMaxFDs, Value: float64(rl.Cur)})
	}
	return ms
}

// ParseStatm reads /proc/PID/statm ("size resident shared text lib data
// dt", in pages) and returns the virtual and resident sizes in bytes.
func ParseStatm(s string, pageSize int) (vsz, rss uint64, err error) {
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0, 0, errors.New("statm: fewer than 2 fields")
	}
	size, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	res, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, 0, err
	}
	ps := uint64(pageSize)
	if ps == 0 || size > ^uint64(0)/ps || res > size {
		return 0, 0, errors.New("statm: sizes out of range")
	}
	return size * ps, res * ps, nil
}
