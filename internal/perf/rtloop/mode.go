package rtloop

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Mode is how the measurement loops run.
type Mode uint8

const (
	Auto     Mode = iota // the environment variable, else Detached if its probe passes
	Detached             // off the Go scheduler (see the package doc)
	Plain                // attached, an ordinary loop on the scheduler
)

// EnvVar forces a mode for the process: plain, detached or auto.
const EnvVar = "RDMACTL_PERF_LOOP"

func (m Mode) String() string {
	switch m {
	case Detached:
		return "detached"
	case Plain:
		return "plain"
	}
	return "auto"
}

// ParseMode reads "auto", "detached" or "plain" ("" is auto).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return Auto, nil
	case "detached":
		return Detached, nil
	case "plain":
		return Plain, nil
	}
	return Auto, fmt.Errorf("loop mode %q: want auto, detached or plain", s)
}

var (
	selectOnce sync.Once
	selected   Mode
	reason     string
	// runtimeClock: Now reads the runtime's nanotime (Detached). Written
	// once, by Select, before any loop's clock is read.
	runtimeClock bool
)

// Select decides the process's mode once and returns it; later calls
// return the first decision whatever they ask. want, unless Auto, wins;
// else EnvVar (plain, detached; auto or unset: probe), else the probe. A
// caller with a flag calls Select before anything reads the clock (Now).
func Select(want Mode) Mode {
	selectOnce.Do(func() {
		selected, reason = choose(want, os.Getenv(EnvVar))
		runtimeClock = selected == Detached
	})
	return selected
}

// Selected is Select(Auto): the mode, decided now if nobody has yet.
func Selected() Mode { return Select(Auto) }

// Reason says why Selected is what it is (for tests and debugging).
func Reason() string {
	Selected()
	return reason
}

func choose(want Mode, env string) (Mode, string) {
	if want != Auto {
		return want, "asked for " + want.String()
	}
	m, err := ParseMode(env)
	if err != nil {
		// A bad value is not worth failing a benchmark over: the
		// safe choice, and the reason says so.
		return Plain, EnvVar + ": " + err.Error()
	}
	if m != Auto {
		return m, EnvVar + "=" + env
	}
	if err := probe(); err != nil {
		return Plain, "probe: " + err.Error()
	}
	return Detached, "probe passed"
}

// probe checks that the runtime's clock, reached by linkname, is the
// monotonic clock package time reads: if a Go release changed what the
// symbol means, the loops fall back to Plain rather than measure with it.
// (entersyscallblock and exitsyscall cannot be probed without risking a
// fatal error; they are the ones x/sys itself links to.)
//
// Each nanotime read is bracketed by two time.Now reads, so a thread
// preempted between reads widens the window instead of failing the probe
// (an unbracketed comparison failed once in CI's loaded VM, and the run
// silently went plain).
func probe() error {
	a0, n0, b0 := time.Now(), nanotime(), time.Now()
	for time.Since(b0) < 200*time.Microsecond {
	}
	a1, n1, b1 := time.Now(), nanotime(), time.Now()
	return clockAgrees(time.Duration(n1-n0), a1.Sub(b0), b1.Sub(a0))
}

// clockAgrees: the runtime clock's advance dn between two bracketed reads
// lies between the brackets' inner span lo and outer span hi (both are
// the same clock's readings, so no slack is needed beyond a microsecond).
func clockAgrees(dn, lo, hi time.Duration) error {
	if dn <= 0 || dn < lo-time.Microsecond || dn > hi+time.Microsecond {
		return fmt.Errorf("runtime.nanotime advanced %v while time.Now saw between %v and %v", dn, lo, hi)
	}
	return nil
}

// epoch is where the plain clock starts.
var epoch = time.Now()

// Now is the loops' clock in nanoseconds: the runtime's nanotime in
// Detached mode (callable detached), time's monotonic clock since the
// package's start otherwise. Only differences of its values mean
// anything, and only within one process.
//
//go:nosplit
func Now() int64 {
	if runtimeClock {
		return nanotime()
	}
	return plainNow()
}

func plainNow() int64 { return int64(time.Since(epoch)) }
