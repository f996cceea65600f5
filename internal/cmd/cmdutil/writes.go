package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"golang.org/x/sys/unix"
)

// Shared by the commands that change the system (link add/delete, dev
// set, system set, statistic qp set/bind/unbind, statistic set/unset):
// rdma's "KEYWORD VALUE" arguments, the live socket, and one line per
// kernel refusal. A write prints nothing on success, as rdma does.

// OpenWrite opens the NLDEV socket and an inventory over it, to resolve
// names to indexes. A write's command declares NeedNetAdmin: the running
// kernel and CAP_NET_ADMIN were checked before it ran (CheckNeeds).
func (a *App) OpenWrite() (*inventory.Config, *inventory.Source, func(), error) {
	// SIGINT and SIGTERM are caught from here on (signalContext) and only
	// cancel a context writes do not read: a write, and the undo of one of
	// several requests that failed, runs to its end instead of being cut
	// short by the signal's default action.
	if a.Ctx != nil {
		_ = a.Ctx.Done()
	}
	w, closeFn, err := inventory.OpenConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	return w, w.Src, closeFn, nil
}

// HasNetAdmin reports whether CAP_NET_ADMIN is in the effective set. The
// kernel checks it (netlink_capable) for every write; asking first means a
// write without it fails the same way whatever it would have read before
// (a port's optional counters, say) and sends nothing. When capget fails
// the kernel decides.
func HasNetAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	return data[unix.CAP_NET_ADMIN/32].Effective&(1<<(unix.CAP_NET_ADMIN%32)) != 0
}

// Refusal is what an errno means for one write: the exit code and the
// line printed after "WHAT: ".
type Refusal struct {
	Code int
	Msg  string
}

// WriteError gives a write's failure one line and its exit code. Without
// CAP_NET_ADMIN the kernel answers EPERM to every write (nldev.c marks
// them RDMA_NL_ADMIN_PERM): exit 4, naming the capability. why says what
// other errnos mean for this write; what an errno means in general comes
// after.
func WriteError(what string, err error, why map[syscall.Errno]Refusal) error {
	var ee *ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return err
	case inventory.IsUnknown(err):
		return WithCode(ExitNotFound, err)
	case errors.Is(err, inventory.ErrNoNetlink):
		return err
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		if r, ok := why[en]; ok {
			return WithCode(r.Code, fmt.Errorf("%s: %s", what, r.Msg))
		}
		switch en {
		case syscall.EPERM, syscall.EACCES:
			return WithCode(ExitPermission, fmt.Errorf("%s: permission denied: needs CAP_NET_ADMIN (run as root)", what))
		case syscall.EOPNOTSUPP:
			return WithCode(ExitUnsupported, fmt.Errorf("%s: the kernel or the device does not support this (EOPNOTSUPP)", what))
		case syscall.EBUSY:
			return WithCode(ExitFailure, fmt.Errorf("%s: busy (EBUSY): the device or setting is in use", what))
		case syscall.ENODEV:
			return WithCode(ExitNotFound, fmt.Errorf("%s: no such device (ENODEV): it went away", what))
		}
		return WithCode(ExitFailure, fmt.Errorf("%s: the kernel refused: %s (%s)", what, en.Error(), errnoName(en)))
	}
	if errors.Is(err, fs.ErrPermission) {
		return WithCode(ExitPermission, fmt.Errorf("%s: permission denied: needs CAP_NET_ADMIN (run as root)", what))
	}
	return fmt.Errorf("%s: %w", what, err)
}

func errnoName(en syscall.Errno) string {
	names := map[syscall.Errno]string{syscall.EINVAL: "EINVAL", syscall.EEXIST: "EEXIST", syscall.ENOENT: "ENOENT",
		syscall.ENFILE: "ENFILE", syscall.ENOMEM: "ENOMEM", syscall.ERANGE: "ERANGE", syscall.E2BIG: "E2BIG", syscall.ENODATA: "ENODATA"}
	if n, ok := names[en]; ok {
		return n
	}
	return "errno " + strconv.Itoa(int(en))
}

// Keywords parses rdma's "KEY VALUE ..." arguments: each key of keys at
// most once, each followed by its value. Anything else is a usage error
// naming what is accepted.
func Keywords(cmd string, args []string, keys ...string) (map[string]string, error) {
	out := map[string]string{}
	for i := 0; i < len(args); i += 2 {
		k := args[i]
		known := false
		for _, want := range keys {
			known = known || k == want
		}
		if !known {
			return nil, UsageErrorf("%s: unexpected %q (expected: %s)", cmd, k, strings.Join(keys, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, UsageErrorf("%s: %s given twice", cmd, k)
		}
		if i+1 >= len(args) {
			return nil, UsageErrorf("%s: %s needs a value", cmd, k)
		}
		out[k] = args[i+1]
	}
	return out, nil
}

// onOff parses rdma's on|off.
func ParseOnOff(cmd, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, UsageErrorf("%s: %q: want on or off", cmd, v)
}

// ParseU32 parses a number argument such as an lqpn or cntn.
func ParseU32(cmd, key, v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, UsageErrorf("%s: %s %q: want a number", cmd, key, v)
	}
	return uint32(n), nil
}

// ibDeviceNameMax is IB_DEVICE_NAME_MAX: names are at most 63 bytes
// (nldev.c's policy for DEV_NAME).
const ibDeviceNameMax = 64

// CheckDevName refuses what the kernel would refuse or mangle: empty
// names, names too long, '%' (a format for the kernel's name assignment)
// and '/' or whitespace (not a file name in /sys/class/infiniband).
func CheckDevName(cmd, name string) error {
	switch {
	case name == "":
		return UsageErrorf("%s: the name is empty", cmd)
	case len(name) >= ibDeviceNameMax:
		return UsageErrorf("%s: %q is too long: RDMA device names have at most %d bytes", cmd, name, ibDeviceNameMax-1)
	case strings.ContainsAny(name, "%/ \t\n"):
		return UsageErrorf("%s: %q: a device name cannot contain '%%', '/' or white space", cmd, name)
	}
	return nil
}
