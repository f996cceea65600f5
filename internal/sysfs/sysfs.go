// Package sysfs reads RDMA device facts from /sys/class/infiniband (and the
// related infiniband_verbs and net classes) the way rdma-core, ibstat and
// show_gids do, without libibverbs.
//
// The root is configurable so that a captured copy of /sys (Capture,
// 'rdmactl capture DIR') can be read offline: New("") reads the live /sys,
// New(dir) reads dir/class/infiniband/...
//
// Malformed or unreadable content never fails a whole call: the affected
// field is left missing (empty string, nil pointer, entry absent) and the
// call goes on. Only a missing device, port or class directory is an error.
package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNoRDMA means the kernel has no /sys/class/infiniband at all: no RDMA
// core loaded, or no RDMA support.
var ErrNoRDMA = errors.New("this kernel has no RDMA devices (no /sys/class/infiniband; is ib_core loaded?)")

// noRDMACapture is ErrNoRDMA for a captured tree: the tree, not this
// kernel, has no class/infiniband.
type noRDMACapture struct{ root string }

func (e *noRDMACapture) Error() string {
	return fmt.Sprintf("the captured tree %s has no RDMA devices (no class/infiniband in it; 'rdmactl capture' on a host with RDMA makes one)", e.root)
}

func (e *noRDMACapture) Is(target error) bool { return target == ErrNoRDMA }

// NotFoundError reports an unknown device or port together with what exists,
// so that the message can say what to type instead.
type NotFoundError struct {
	Kind   string   // "device" or "port"
	Name   string   // what was asked for: "mlx5_9" or "rxe0/2"
	Exists []string // what exists instead
}

func (e *NotFoundError) Error() string {
	have := "none"
	if len(e.Exists) > 0 {
		have = strings.Join(e.Exists, ", ")
	}
	if e.Kind == "port" {
		return fmt.Sprintf("no RDMA port %s (ports: %s)", e.Name, have)
	}
	return fmt.Sprintf("no RDMA device %q (devices: %s)", e.Name, have)
}

// Is lets errors.Is(err, fs.ErrNotExist) match.
func (e *NotFoundError) Is(target error) bool { return target == fs.ErrNotExist }

// FS reads one sysfs tree.
type FS struct {
	root string

	// Warn, if set, gets one line for each entry of a captured tree that
	// is skipped (a device entry that is not a directory, a port
	// directory that is not a port number), once per entry.
	Warn   func(string)
	warned sync.Map
}

// skip reports a skipped entry of a captured tree once.
func (f *FS) skip(path, why string) {
	if f.Warn == nil {
		return
	}
	if _, dup := f.warned.LoadOrStore(path, true); !dup {
		f.Warn(path + ": " + why + ", skipped")
	}
}

// New returns a reader of the sysfs tree at root; "" means the live "/sys".
// Any other root is a captured tree, whose files are read only where they
// are regular files inside it (captureRoots).
func New(root string) *FS {
	if root == "" {
		root = "/sys"
	}
	if root != "/sys" {
		addCaptureRoot(root)
	}
	return &FS{root: root}
}

// captureRoots are the captured trees this process reads (New), each as
// given and as resolved. A read below one (readBoundedAt) must end on a
// regular file inside the resolved root: a capture is input like any
// other, and a symlink in it to /etc/shadow, or a FIFO where a port's
// state should be, must not be printed or hang the reader. Bundles are
// checked so when they are unpacked; a directory given as --sysfs-root
// is checked here, file by file.
var captureRoots sync.Map // filepath.Clean(root) -> resolved root

func addCaptureRoot(root string) {
	root = filepath.Clean(root)
	if _, ok := captureRoots.Load(root); ok {
		return
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		real = root // the reads will fail with the root's own error
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	captureRoots.Store(root, real)
}

// ForgetCaptureRoot drops root from captureRoots: an unpacked bundle's
// directory, removed when its source closes (an exporter reading a bundle
// unpacks it for each scrape).
func ForgetCaptureRoot(root string) { captureRoots.Delete(filepath.Clean(root)) }

// captureRootOf is the resolved root of the captured tree path lies in.
func captureRootOf(path string) (string, bool) {
	path = filepath.Clean(path)
	var real string
	captureRoots.Range(func(k, v any) bool {
		if r := k.(string); path == r || strings.HasPrefix(path, r+"/") {
			real = v.(string)
			return false
		}
		return true
	})
	return real, real != ""
}

// errOutside and errNotRegular refuse a file of a captured tree.
var (
	errOutside    = errors.New("a symlink leads out of the captured tree")
	errNotRegular = errors.New("not a regular file")
)

// checkCaptured refuses the open file fd of a captured tree unless it is a
// regular file inside its tree (the kernel's name for the open file,
// /proc/self/fd/N, says where the symlinks led).
func checkCaptured(fd int, path string) error {
	root, ok := captureRootOf(path)
	if !ok {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errNotRegular
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		if real, err = filepath.EvalSymlinks(path); err != nil {
			return err
		}
	}
	if !inside(root, real) {
		return errOutside
	}
	return nil
}

// Root is the directory that plays the part of /sys.
func (f *FS) Root() string { return f.root }

func (f *FS) ibDir() string { return filepath.Join(f.root, "class", "infiniband") }

func (f *FS) devDir(dev string) string { return filepath.Join(f.ibDir(), dev) }

func (f *FS) portDir(dev string, port uint32) string {
	return filepath.Join(f.ibDir(), dev, "ports", fmt.Sprint(port))
}

// Devices lists the RDMA device names, sorted. A kernel without
// /sys/class/infiniband gives ErrNoRDMA; one with the class but no devices
// gives an empty list.
func (f *FS) Devices() ([]string, error) {
	ents, err := os.ReadDir(f.ibDir())
	if errors.Is(err, fs.ErrNotExist) {
		if f.root != "/sys" {
			return nil, &noRDMACapture{root: f.root}
		}
		return nil, ErrNoRDMA
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		// In a captured tree an entry is a device only if it is a
		// directory (HasDevice's rule), or one dangling link or stray
		// file would fail every listing with "no RDMA device" for a
		// device it listed. The live /sys has only device links here.
		if f.root != "/sys" && !f.HasDevice(e.Name()) {
			f.skip(filepath.Join(f.ibDir(), e.Name()), "not a device directory")
			continue
		}
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

// HasDevice reports whether the tree has a device called dev (its
// class/infiniband directory): one stat, no listing.
func (f *FS) HasDevice(dev string) bool {
	if dev == "" || strings.ContainsAny(dev, "/\x00") || dev == "." || dev == ".." {
		return false
	}
	st, err := os.Stat(f.devDir(dev))
	return err == nil && st.IsDir()
}

// checkDevice returns a NotFoundError naming the existing devices if dev is
// not one of them.
func (f *FS) checkDevice(dev string) error {
	if f.HasDevice(dev) {
		return nil
	}
	names, err := f.Devices()
	if err != nil {
		return err
	}
	return &NotFoundError{Kind: "device", Name: dev, Exists: names}
}

// checkPort returns a NotFoundError naming the device's ports if port is
// not one of them.
func (f *FS) checkPort(dev string, port uint32) error {
	if err := f.checkDevice(dev); err != nil {
		return err
	}
	st, err := os.Stat(f.portDir(dev, port))
	if err == nil && st.IsDir() && port != 0 {
		return nil
	}
	// A ports directory this user cannot read hides the port; say so
	// (exit 4) rather than that there is no such port.
	if errors.Is(err, fs.ErrPermission) {
		return err
	}
	ps, err := f.portList(dev)
	if errors.Is(err, fs.ErrPermission) {
		return err
	}
	var have []string
	for _, p := range ps {
		have = append(have, fmt.Sprintf("%s/%d", dev, p))
	}
	return &NotFoundError{Kind: "port", Name: fmt.Sprintf("%s/%d", dev, port), Exists: have}
}

// readString returns the trimmed content of a sysfs file and whether the
// read worked. sysfs attributes end in one newline; an attribute may also
// be empty (rxe's fw_ver), which is reported as "" with ok true.
//
// At most MaxRead bytes are read: a sysfs attribute is at most a page, and a
// huge or endless file in a broken capture is never read whole.
func readString(path string) (string, bool) {
	b, err := ReadBounded(path)
	if err != nil {
		return "", false
	}
	return TrimAttr(b), true
}

// TrimAttr is a sysfs attribute's value without the newline (and NULs or
// spaces) the kernel ends it with.
func TrimAttr(b []byte) string { return strings.TrimRight(string(b), "\n\x00 ") }

// MaxRead bounds every file read: 64 KiB, far above any sysfs attribute.
const MaxRead = 64 << 10

// ReadBounded reads at most MaxRead bytes of path.
//
// It uses open/read/close directly rather than os.Open: an *os.File tries
// to register every file with the runtime's poller (an epoll_ctl that
// fails for regular files, and an fcntl), three extra syscalls per sysfs
// attribute; at 128 devices the counters command reads thousands.
//
// Under /sys (kernfs) a read shorter than asked is the end of the
// attribute: kernfs hands out a show() result, at most a page, in one read,
// so the read that would return 0 is skipped. Elsewhere (a captured tree,
// perhaps on NFS or 9p, where reads may come short) it reads to EOF.
func ReadBounded(path string) ([]byte, error) {
	return readBoundedAt(unix.AT_FDCWD, path, path)
}

// readBoundedAt is ReadBounded of name relative to directory dirfd;
// path names the file in errors and tells kernfs apart.
func readBoundedAt(dirfd int, name, path string) ([]byte, error) {
	kernfs := strings.HasPrefix(path, "/sys/")
	var fd int
	var err error
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if !kernfs {
		// A FIFO opens at once without a writer (and reads as empty);
		// in a captured tree checkCaptured refuses it, and whatever else
		// is not a regular file.
		flags |= unix.O_NONBLOCK | unix.O_NOCTTY
	}
	for {
		fd, err = unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if !kernfs {
		if err := checkCaptured(fd, path); err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
	buf := make([]byte, 0, 512)
	for len(buf) < MaxRead {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := min(cap(buf), MaxRead)
		n, err := unix.Read(fd, buf[len(buf):end])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n <= 0 {
			break
		}
		short := n < end-len(buf)
		buf = buf[:len(buf)+n]
		if kernfs && short {
			break
		}
	}
	return buf, nil
}

// readOpt is readString without the ok: missing and empty look alike.
func readOpt(path string) string {
	s, _ := readString(path)
	return s
}

// Dir is a directory opened once (O_PATH) whose files are then read
// relative to it, one lookup each instead of a walk from the root: under
// /sys a device's path goes through /sys/class/infiniband and the
// device's symlink, and at 128 rxe devices opening files by full path
// was 37% of -d dev show's CPU (an attribute by full path 69 us under
// TCG, relative to its directory 34 us). PathDir is the same reads by
// full path, for a directory read once or twice, where the open and close
// would cost more than the walks they save.
type Dir struct {
	fd   int // unix.AT_FDCWD for PathDir
	path string
}

// PathDir reads the files under path by their full paths; Close does
// nothing. It cannot fail: a missing directory fails each read.
func PathDir(path string) *Dir { return &Dir{fd: unix.AT_FDCWD, path: path} }

// at is name as d's reads name it: relative to d's descriptor, or the
// full path for a PathDir.
func (d *Dir) at(name string) string {
	if d.fd == unix.AT_FDCWD {
		return filepath.Join(d.path, name)
	}
	return name
}

// OpenDir opens the directory path for Dir's reads; Close releases it.
func OpenDir(path string) (*Dir, error) {
	for {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
		return &Dir{fd: fd, path: path}, nil
	}
}

// Read is ReadBounded of the file at name (a relative path) under d.
func (d *Dir) Read(name string) ([]byte, error) {
	return readBoundedAt(d.fd, d.at(name), filepath.Join(d.path, name))
}

// LinkBase is the last element of the target of the symlink at name
// under d, "" if it is not one.
func (d *Dir) LinkBase(name string) string {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(d.fd, d.at(name), buf)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return ""
		case n == len(buf) && len(buf) < 4096:
			buf = make([]byte, 2*len(buf))
			continue
		}
		return filepath.Base(string(buf[:n]))
	}
}

// String is the attribute at name under d as readString gives it, "" if
// it cannot be read.
func (d *Dir) String(name string) string {
	b, err := d.Read(name)
	if err != nil {
		return ""
	}
	return TrimAttr(b)
}

// Close releases d.
func (d *Dir) Close() error {
	if d.fd == unix.AT_FDCWD {
		return nil
	}
	return unix.Close(d.fd)
}

// linkBase returns the last element of a symlink's target, or "".
func linkBase(path string) string {
	t, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return filepath.Base(t)
}

// CheckPort fails with a *NotFoundError, naming what exists, unless dev
// has port.
func (f *FS) CheckPort(dev string, port uint32) error { return f.checkPort(dev, port) }

// PortNumbers lists dev's ports, sorted, reading nothing else; an unknown
// dev gives a *NotFoundError.
func (f *FS) PortNumbers(dev string) ([]uint32, error) {
	if err := f.checkDevice(dev); err != nil {
		return nil, err
	}
	ps, err := f.portList(dev)
	if errors.Is(err, fs.ErrPermission) {
		// Listed with the rest, this device without ports, and said
		// (a lookup of one of its ports is refused: checkPort).
		f.skip(filepath.Join(f.devDir(dev), "ports"), "permission denied")
	}
	return ps, nil
}
