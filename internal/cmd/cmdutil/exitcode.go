package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// Exit codes. They are part of the interface (README "Exit codes"): scripts
// branch on them, so never renumber.
const (
	ExitOK            = 0
	ExitFailure       = 1   // anything not listed below
	ExitUsage         = 2   // bad flags or arguments
	ExitNotFound      = 3   // unknown device, port, GID index, resource
	ExitPermission    = 4   // EACCES/EPERM, RLIMIT_MEMLOCK too low
	ExitUnsupported   = 5   // the kernel or device lacks the feature
	ExitPeer          = 6   // benchmark peer unreachable, vanished or garbled; port went down
	ExitPerfThreshold = 7   // perf missed a threshold (-w, -y, --limit_lat)
	ExitDoctorFail    = 8   // doctor found a FAIL
	ExitInterrupted   = 130 // SIGINT/SIGTERM
)

// ExitStatus is the one mapping from an error to rdmactl's exit code and
// the one line printed for it (without the "rdmactl: " prefix). Commands
// return errors as the packages made them; the packages' typed errors say
// what went wrong, and this says what it means to a script. The first rule
// that matches wins, so the order matters where an error matches several
// (a verbs PermissionError also wraps EACCES, a sysfs NotFoundError also
// matches fs.ErrNotExist).
func ExitStatus(err error) (code int, msg string) {
	if err == nil {
		return ExitOK, ""
	}
	code, err = Classify(err)
	return code, OneLine(err.Error())
}

// Classify is ExitStatus's table, returning the error to print: the same
// one, or one that adds what to do.
func Classify(err error) (int, error) {
	var (
		ee     *ExitError
		peer   *perf.PeerError
		limit  *perf.LimitError
		kernel *inventory.NetlinkError
		dest   *inventory.DestNotEmptyError
		bundle *inventory.BadBundleError
		root   *inventory.RootError
	)
	fromKernel := errors.As(err, &kernel) // an NLDEV request's errno
	switch {
	// A signal ends every command with 130, whatever error it caused.
	case errors.Is(err, context.Canceled):
		return ExitInterrupted, err
	// A command's own decision: bad arguments, a request it refuses.
	case errors.As(err, &ee):
		return ee.Code, ee.Err
	case errors.As(err, &peer):
		return ExitPeer, err
	// perf -w/-y/--limit_lat: the run finished and missed a threshold.
	case errors.As(err, &limit):
		return ExitPerfThreshold, err
	// capture DIR: DIR must be new or empty.
	case errors.As(err, &dest):
		return ExitUsage, err
	// --sysfs-root FILE: not a bundle rdmactl can read back.
	case errors.As(err, &bundle):
		return ExitUsage, err
	// --sysfs-root PATH: nothing there (or not readable).
	case errors.As(err, &root):
		return ExitUsage, err
	case errors.Is(err, inventory.ErrNoNetlink):
		return ExitUnsupported, ErrNoRDMA
	case errors.Is(err, inventory.ErrNoSysfs):
		return ExitUnsupported, err
	case inventory.IsUnknown(err), inventory.IsGone(err):
		return ExitNotFound, err
	case inventory.IsPermission(err) && fromKernel:
		return ExitPermission, fmt.Errorf("%w (needs root or CAP_NET_ADMIN)", err)
	case inventory.IsPermission(err):
		return ExitPermission, err
	case fromKernel && errors.Is(err, syscall.EOPNOTSUPP):
		return ExitUnsupported, fmt.Errorf("%w (this kernel does not support the request)", err)
	case inventory.IsUnsupported(err):
		return ExitUnsupported, err
	case isCobraUsage(err):
		return ExitUsage, err
	}
	return ExitFailure, err
}

// isCobraUsage recognises the errors cobra makes itself, before any
// command runs (flag errors come through SetFlagErrorFunc as usage errors).
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") || strings.Contains(s, "arg(s)")
}

// ErrNoRDMA is the one line printed on a machine without any RDMA: no
// NETLINK_RDMA family and no /sys/class/infiniband.
var ErrNoRDMA = errors.New("this kernel has no RDMA support: no RDMA netlink (NETLINK_RDMA) and no /sys/class/infiniband (is ib_core loaded? for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)")

// ExitError is a command's own decision about an error's exit code: bad
// arguments (UsageErrorf), or a feature a command refuses outright
// (Unsupportedf). Errors from the packages are not wrapped in it; their
// type decides (Classify).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// WithCode wraps err so that main exits with code.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// Quiet ends a command with code and prints nothing more: it has said
// what it had to (perftest's -V under its name prints the version and
// exits 1, as perftest does).
func Quiet(code int) error { return &ExitError{Code: code, Err: errQuiet} }

var errQuiet = errors.New("")

// UsageErrorf reports bad command-line input (exit 2).
func UsageErrorf(format string, a ...any) error {
	return WithCode(ExitUsage, fmt.Errorf(format, a...))
}

// Unsupportedf reports what a command cannot do here (exit 5).
func Unsupportedf(format string, a ...any) error {
	return WithCode(ExitUnsupported, fmt.Errorf(format, a...))
}

// OneLine keeps error output to a single line, whatever the error says.
func OneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// ErrorLine is the line main would print for err, for a message printed
// in passing (a warning that does not end the command).
func ErrorLine(err error) string {
	_, msg := ExitStatus(err)
	return msg
}
