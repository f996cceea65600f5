package verbs

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// The errors here are what the command layer maps to exit codes:
//   - *PermissionError and *MemlockError: exitPermission (IsPermission);
//   - *DeviceNotFoundError, *PortNotFoundError: exitNotFound;
//   - ErrUnsupported (errors.Is), *NoDataPathError: exitUnsupported;
//   - ErrDeviceGone: the device was removed (hot-unplug, rdma link delete).
// Each Error() is one line that says what failed and what to do.

// ErrDeviceGone is wrapped by errors from commands on a device that has
// been removed while open: the kernel answers EIO (disassociated context)
// or ENODEV from then on.
var ErrDeviceGone = errors.New("the device was removed")

// ErrUnsupported is wrapped by errors from commands the kernel or the
// driver does not implement (EOPNOTSUPP, ENOSYS, EPROTONOSUPPORT, ENOTTY).
var ErrUnsupported = errors.New("not supported by this kernel or device")

// ErrClosed is returned by calls on a closed Context, PD, MR or Buffer.
var ErrClosed = errors.New("verbs: use of a closed object")

// CommandError is a uverbs command the kernel refused.
type CommandError struct {
	Device string     // "rxe0"
	Op     string     // "REG_MR"
	Errno  unix.Errno // what the kernel returned
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Device, e.Op, e.Errno)
}

// Unwrap exposes both the errno and, where it applies, the sentinel.
func (e *CommandError) Unwrap() []error {
	errs := []error{e.Errno}
	switch e.Errno {
	case unix.EIO, unix.ENODEV:
		errs = append(errs, ErrDeviceGone)
	case unix.EOPNOTSUPP, unix.ENOSYS, unix.EPROTONOSUPPORT, unix.ENOTTY:
		errs = append(errs, ErrUnsupported)
	}
	return errs
}

// cmdError wraps err (an errno from a uverbs syscall) for op on device dev.
// EIO/ENODEV get a message that says the device went away, since that is
// the only way the kernel reports a disassociated context.
func cmdError(dev, op string, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return fmt.Errorf("%s: %s: %w", dev, op, err)
	}
	if errno == unix.EIO || errno == unix.ENODEV {
		return &deviceGoneError{CommandError{Device: dev, Op: op, Errno: errno}}
	}
	return &CommandError{Device: dev, Op: op, Errno: errno}
}

// deviceGoneError is a CommandError with a message naming the cause.
type deviceGoneError struct{ CommandError }

func (e *deviceGoneError) Error() string {
	return fmt.Sprintf("%s: %s failed: the device was removed while in use (%v); reopen it once it is back", e.Device, e.Op, e.Errno)
}

// PermissionError: the uverbs node cannot be opened for lack of permission.
type PermissionError struct {
	Device string // "rxe0"
	Path   string // "/dev/infiniband/uverbs0"
	Err    error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("cannot open %s (device %s): %v: run as root, or give your user access to the node (group rdma with a udev rule such as KERNEL==\"uverbs*\", GROUP=\"rdma\", MODE=\"0660\")",
		e.Path, e.Device, errnoText(e.Err))
}

func (e *PermissionError) Unwrap() error { return e.Err }

// MemlockError: memory could not be pinned because RLIMIT_MEMLOCK is too
// low (the kernel says only ENOMEM; this names the numbers).
type MemlockError struct {
	Device string
	Op     string // "REG_MR"
	// Limit is the soft RLIMIT_MEMLOCK in bytes (^uint64(0) = unlimited).
	Limit uint64
	// Pinned is what the process had pinned already (VmPin) and Need the
	// size of the request, both in bytes.
	Pinned, Need uint64
}

func (e *MemlockError) Error() string {
	return fmt.Sprintf("%s: %s: cannot pin %s of memory: RLIMIT_MEMLOCK is %s and %s are already pinned; raise the limit ('ulimit -l unlimited' in the shell, LimitMEMLOCK=infinity for a systemd service, or memlock in /etc/security/limits.conf) or run with CAP_IPC_LOCK",
		e.Device, e.Op, kib(e.Need), kib(e.Limit), kib(e.Pinned))
}

// Unwrap makes errors.Is(err, unix.ENOMEM) true, as the kernel said.
func (e *MemlockError) Unwrap() error { return unix.ENOMEM }

func kib(n uint64) string {
	if n == ^uint64(0) {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

// DeviceNotFoundError: no uverbs device has that name.
type DeviceNotFoundError struct {
	Name  string
	Known []string // the devices that exist
}

func (e *DeviceNotFoundError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("device %q not found: there are no RDMA devices with a uverbs node (is ib_uverbs loaded? see 'rdmactl dev show')", e.Name)
	}
	return fmt.Sprintf("device %q not found: known devices are %s", e.Name, strings.Join(e.Known, ", "))
}

// PortNotFoundError: the device has no such port.
type PortNotFoundError struct {
	Device string
	Port   int
	Ports  int // phys_port_cnt
}

func (e *PortNotFoundError) Error() string {
	return fmt.Sprintf("%s has no port %d: ports are 1..%d", e.Device, e.Port, e.Ports)
}

// NoDataPathError: the device opened, but rdmactl has no user-space data
// path (provider) for its driver, so CQs and QPs cannot be created.
type NoDataPathError struct {
	Device string
	Driver string
}

func (e *NoDataPathError) Error() string {
	return fmt.Sprintf("%s: no user-space data path for driver %s (rdmactl supports rxe and mlx5); device queries still work", e.Device, e.Driver)
}

func (e *NoDataPathError) Unwrap() error { return ErrUnsupported }

// IsPermission reports whether err is a permission problem: the node could
// not be opened, RLIMIT_MEMLOCK is too low, or the kernel said EACCES/EPERM.
func IsPermission(err error) bool {
	var pe *PermissionError
	var me *MemlockError
	return errors.As(err, &pe) || errors.As(err, &me) ||
		errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)
}

// IsNotFound reports whether err names a device or port that does not exist.
func IsNotFound(err error) bool {
	var de *DeviceNotFoundError
	var pe *PortNotFoundError
	return errors.As(err, &de) || errors.As(err, &pe)
}

func errnoText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// DoorbellError reports a provider's failed doorbell syscall (rxe's
// POST_SEND write: EINVAL while the QP is below RTS, EIO or ENODEV once
// the device is gone). The provider fills Device and Provider when it
// creates the QP, and Errno when the call fails: preallocated, so that a
// failing post does not allocate.
type DoorbellError struct {
	Device   string
	Provider string // "rxe"
	Errno    unix.Errno
}

func (e *DoorbellError) Error() string {
	dev := e.Device
	if dev == "" {
		dev = "verbs"
	}
	if e.Errno == unix.EIO || e.Errno == unix.ENODEV {
		return dev + ": POST_SEND (" + e.Provider + " doorbell) failed: the device was removed while in use (" + e.Errno.Error() + ")"
	}
	return dev + ": POST_SEND (" + e.Provider + " doorbell): " + e.Errno.Error()
}

// Unwrap exposes the errno and, for EIO/ENODEV, ErrDeviceGone.
func (e *DoorbellError) Unwrap() []error {
	if e.Errno == unix.EIO || e.Errno == unix.ENODEV {
		return []error{e.Errno, ErrDeviceGone}
	}
	return []error{e.Errno}
}

// Errors for work requests the data path refuses before touching a ring.
// They are preallocated so that returning them does not allocate.
var (
	ErrBadOpcode     = errors.New("verbs: send work request has an opcode this data path does not support (use SEND, SEND_WITH_IMM, RDMA_WRITE[_WITH_IMM], RDMA_READ or an atomic)")
	ErrUDOpcode      = errors.New("verbs: UD QPs only send SEND and SEND_WITH_IMM")
	ErrReadNotRC     = errors.New("verbs: RDMA READ needs an RC QP")
	ErrNoAH          = errors.New("verbs: UD send work request without an address handle (SendWR.AH)")
	ErrInlineRead    = errors.New("verbs: RDMA READ cannot be inline")
	ErrInlineTooLong = errors.New("verbs: inline send longer than the QP's max_inline_data (see QP.Caps)")
	ErrNoRQ          = errors.New("verbs: QP has no receive queue")
	ErrBatchTooLarge = errors.New("verbs: more work requests in one post than the queue can ever hold (QP.Caps says how many); post fewer at a time")
)
