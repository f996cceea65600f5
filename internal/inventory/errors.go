package inventory

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// The kinds of error an inventory can return, named here so that the
// command layer classifies them (one exit code each) without importing the
// packages that made them.

// ErrNoNetlink matches errors of a kernel without RDMA netlink.
var ErrNoNetlink = nldev.ErrNoRDMA

// ErrNoSysfs matches errors of a tree without /sys/class/infiniband.
var ErrNoSysfs = sysfs.ErrNoRDMA

// ErrNoSystem matches errors of a kernel without the RDMA subsystem
// settings (SYS_GET).
var ErrNoSystem = nldev.ErrNoSystem

// NetlinkError is an errno the kernel answered an NLDEV request with.
type NetlinkError = nldev.KernelError

// ErrNoVerbsDevice: no RDMA device has a uverbs node. It matches
// IsUnsupported.
var ErrNoVerbsDevice error = &unsupportedError{"no RDMA device with a uverbs node (is ib_uverbs loaded? 'rdmactl dev show' lists the devices)"}

// unsupportedError is a fact of this machine that rules a request out.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }
func (e *unsupportedError) Unwrap() error { return verbs.ErrUnsupported }

// IsUnknown reports a device, port or uverbs device that does not exist
// (any source), with what exists in the message.
func IsUnknown(err error) bool {
	var a *nldev.NotFoundError
	var b *sysfs.NotFoundError
	return errors.As(err, &a) || errors.As(err, &b) || verbs.IsNotFound(err)
}

// IsGone reports a device or port that existed a moment ago: the kernel
// answers a request about it with ENODEV or ENOENT, or one of its files
// under /sys/class/infiniband* has vanished. (Other missing files, such
// as a capture's destination, are not about a device.)
func IsGone(err error) bool {
	if !errors.Is(err, syscall.ENODEV) && !errors.Is(err, syscall.ENOENT) {
		return false
	}
	var k *nldev.KernelError
	var p *fs.PathError
	return errors.As(err, &k) || errors.As(err, &p) && strings.Contains(p.Path, "/class/infiniband")
}

// IsPermission reports a permission problem: a node or file that cannot
// be opened, a kernel answer EPERM/EACCES, RLIMIT_MEMLOCK too low.
func IsPermission(err error) bool {
	return verbs.IsPermission(err) || errors.Is(err, fs.ErrPermission)
}

// IsUnsupported reports a feature the kernel or the device lacks: a
// uverbs command or driver it does not implement, an mlx5-only request of
// another device, a netlink request the kernel does not know.
func IsUnsupported(err error) bool {
	var k *nldev.KernelError
	return errors.Is(err, verbs.ErrUnsupported) || errors.As(err, &k) && errors.Is(err, syscall.EOPNOTSUPP)
}
