package main

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
	exitOK            = 0
	exitFailure       = 1   // anything not listed below
	exitUsage         = 2   // bad flags or arguments
	exitNotFound      = 3   // unknown device, port, GID index, resource
	exitPermission    = 4   // EACCES/EPERM, RLIMIT_MEMLOCK too low
	exitUnsupported   = 5   // the kernel or device lacks the feature
	exitPeer          = 6   // benchmark peer unreachable, vanished or garbled; port went down
	exitPerfThreshold = 7   // perf missed a threshold (-w, -y, --limit_lat)
	exitDoctorFail    = 8   // doctor found a FAIL
	exitInterrupted   = 130 // SIGINT/SIGTERM
)

// exitStatus is the one mapping from an error to rdmactl's exit code and
// the one line printed for it (without the "rdmactl: " prefix). Commands
// return errors as the packages made them; the packages' typed errors say
// what went wrong, and this says what it means to a script. The first rule
// that matches wins, so the order matters where an error matches several
// (a verbs PermissionError also wraps EACCES, a sysfs NotFoundError also
// matches fs.ErrNotExist).
func exitStatus(err error) (code int, msg string) {
	if err == nil {
		return exitOK, ""
	}
	code, err = classify(err)
	return code, oneLine(err.Error())
}

// classify is exitStatus's table, returning the error to print: the same
// one, or one that adds what to do.
func classify(err error) (int, error) {
	var (
		ee     *exitError
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
		return exitInterrupted, err
	// A command's own decision: bad arguments, a request it refuses.
	case errors.As(err, &ee):
		return ee.code, ee.err
	case errors.As(err, &peer):
		return exitPeer, err
	// perf -w/-y/--limit_lat: the run finished and missed a threshold.
	case errors.As(err, &limit):
		return exitPerfThreshold, err
	// capture DIR: DIR must be new or empty.
	case errors.As(err, &dest):
		return exitUsage, err
	// --sysfs-root FILE: not a bundle rdmactl can read back.
	case errors.As(err, &bundle):
		return exitUsage, err
	// --sysfs-root PATH: nothing there (or not readable).
	case errors.As(err, &root):
		return exitUsage, err
	case errors.Is(err, inventory.ErrNoNetlink):
		return exitUnsupported, errNoRDMA
	case errors.Is(err, inventory.ErrNoSysfs):
		return exitUnsupported, err
	case inventory.IsUnknown(err), inventory.IsGone(err):
		return exitNotFound, err
	case inventory.IsPermission(err) && fromKernel:
		return exitPermission, fmt.Errorf("%w (needs root or CAP_NET_ADMIN)", err)
	case inventory.IsPermission(err):
		return exitPermission, err
	case fromKernel && errors.Is(err, syscall.EOPNOTSUPP):
		return exitUnsupported, fmt.Errorf("%w (this kernel does not support the request)", err)
	case inventory.IsUnsupported(err):
		return exitUnsupported, err
	case isCobraUsage(err):
		return exitUsage, err
	}
	return exitFailure, err
}

// isCobraUsage recognises the errors cobra makes itself, before any
// command runs (flag errors come through SetFlagErrorFunc as usage errors).
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") || strings.Contains(s, "arg(s)")
}

// errNoRDMA is the one line printed on a machine without any RDMA: no
// NETLINK_RDMA family and no /sys/class/infiniband.
var errNoRDMA = errors.New("this kernel has no RDMA support: no RDMA netlink (NETLINK_RDMA) and no /sys/class/infiniband (is ib_core loaded? for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)")

// exitError is a command's own decision about an error's exit code: bad
// arguments (usageErrorf), or a feature a command refuses outright
// (unsupportedf). Errors from the packages are not wrapped in it; their
// type decides (classify).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErrorf reports bad command-line input (exit 2).
func usageErrorf(format string, a ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, a...))
}

// unsupportedf reports what a command cannot do here (exit 5).
func unsupportedf(format string, a ...any) error {
	return withCode(exitUnsupported, fmt.Errorf(format, a...))
}

// oneLine keeps error output to a single line, whatever the error says.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// errorLine is the line main would print for err, for a message printed
// in passing (a warning that does not end the command).
func errorLine(err error) string {
	_, msg := exitStatus(err)
	return msg
}
