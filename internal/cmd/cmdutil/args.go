package cmdutil

import (
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// ParseDevPort splits "DEV" or "DEV/PORT" (port 0 = all ports); "" is
// every device. A bad port is a usage error.
func ParseDevPort(arg string) (dev string, port uint32, err error) {
	if arg == "" {
		return "", 0, nil
	}
	dev, p, hasPort := strings.Cut(arg, "/")
	if dev == "" {
		return "", 0, UsageErrorf("%q: want DEV or DEV/PORT, as in rxe0 or rxe0/1", arg)
	}
	if hasPort {
		n, perr := strconv.ParseUint(p, 10, 32)
		if perr != nil || n == 0 {
			return "", 0, UsageErrorf("%q: the port must be a number from 1, as in rxe0/1", arg)
		}
		port = uint32(n)
	}
	return dev, port, nil
}

// ParseInterval accepts a Go duration ("500ms", "2s") or plain seconds ("2").
func ParseInterval(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if secs, err2 := strconv.ParseFloat(s, 64); err2 == nil {
			d, err = time.Duration(secs*float64(time.Second)), nil
		}
	}
	if err != nil || d < 10*time.Millisecond || d > 24*time.Hour {
		return 0, UsageErrorf("--watch=%s: want an interval from 10ms to 24h, such as --watch=2s", s)
	}
	return d, nil
}

// IsTerminal reports whether w is a terminal (for the progress line).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Prefixed is the words of cands that start with prefix.
func Prefixed(prefix string, cands ...string) []cobra.Completion {
	var out []cobra.Completion
	for _, c := range cands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
