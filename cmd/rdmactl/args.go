package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Shared helpers of the netlink commands (dev show, link, res) that other
// commands may call too: opening the NLDEV socket, giving netlink errors
// their exit code, and "unknown device" messages that list what exists.

// errNoRDMA is the one line printed on a machine without any RDMA: no
// NETLINK_RDMA family and no /sys/class/infiniband.
var errNoRDMA = errors.New("this kernel has no RDMA support: no RDMA netlink (NETLINK_RDMA) and no /sys/class/infiniband (is ib_core loaded? for Soft-RoCE: modprobe rdma_rxe; rdma link add rxe0 type rxe netdev eth0)")

// nlError gives an nldev (or sysfs) error its exit code: no RDMA in the
// kernel -> exitUnsupported, unknown device/port -> exitNotFound,
// EPERM/EACCES -> exitPermission, ENODEV/ENOENT from the kernel (the device
// went away between two requests) -> exitNotFound. Errors that already
// have a code keep it.
func nlError(err error) error {
	var ee *exitError
	var nf *nldev.NotFoundError
	var snf *sysfs.NotFoundError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case errors.Is(err, nldev.ErrNoRDMA), errors.Is(err, sysfs.ErrNoRDMA):
		return withCode(exitUnsupported, errNoRDMA)
	case errors.As(err, &nf), errors.As(err, &snf):
		return withCode(exitNotFound, err)
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES), errors.Is(err, fs.ErrPermission):
		return withCode(exitPermission, fmt.Errorf("%w (needs root or CAP_NET_ADMIN)", err))
	case errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENOENT):
		return withCode(exitNotFound, err)
	case errors.Is(err, syscall.EOPNOTSUPP):
		return withCode(exitUnsupported, fmt.Errorf("%w (this kernel does not support the request)", err))
	}
	return err
}

// parseDevPort splits "DEV" or "DEV/PORT" (port 0 = all ports); "" is
// every device. A bad port is a usage error.
func parseDevPort(arg string) (dev string, port uint32, err error) {
	if arg == "" {
		return "", 0, nil
	}
	dev, p, hasPort := strings.Cut(arg, "/")
	if dev == "" {
		return "", 0, usageErrorf("%q: want DEV or DEV/PORT, as in rxe0 or rxe0/1", arg)
	}
	if hasPort {
		n, perr := strconv.ParseUint(p, 10, 32)
		if perr != nil || n == 0 {
			return "", 0, usageErrorf("%q: the port must be a number from 1, as in rxe0/1", arg)
		}
		port = uint32(n)
	}
	return dev, port, nil
}
