package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Capture copies, from the tree f reads, the files rdmactl reads into dst,
// laid out like the fixture trees (testdata/README.md) so that New(dst) and
// rdmactl --sysfs-root dst read the same facts offline. dst must not exist
// or be an empty directory.
//
// Only what the readers of this package and of internal/inventory open is
// copied (the lists below; a reader of a new file must add it here, which
// TestCaptureFixtures notices). sysfs is not an ordinary file system, so
// the copy is bounded and never follows the tree where it does not lead:
//   - class entries (class/infiniband/<dev>, class/infiniband_verbs/uverbsN,
//     class/net/<nd>) are symlinks into devices/ on a live system; they are
//     resolved, and stored as plain directories;
//   - the only symlinks kept are the ones the readers resolve: <dev>/device
//     and device/driver, stored relative, pointing at directories under
//     dst/devices and dst/bus that hold just numa_node;
//   - a symlink whose target leaves the source tree, or loops, is not
//     followed; a file that is not a regular file (FIFO, device) is not
//     opened;
//   - each file is read up to MaxRead bytes (what the readers read; a
//     longer one is stored cut there); device, port and counter files,
//     which the kernel may answer by asking the device, get
//     CaptureReadTimeout: a read the kernel blocks is abandoned (GID
//     slots come from the kernel's GID cache and are read directly);
//   - names taken from file contents (parent, gid_attrs/ndevs, ibdev) are
//     used only when they are a single path element.
//
// Files that exist but cannot be read (gid_attrs of a slot the kernel
// rejects, EINVAL; write-only attributes) are left out and listed, with
// the error, in dst/UNREADABLE; they do not fail the capture. It fails
// when the source has no RDMA class (ErrNoRDMA), dst cannot be written,
// the bounds are hit, or reads timed out (dst then holds what was read).
func (f *FS) Capture(dst string) error {
	c, err := newCapturer(f.root, dst)
	if err != nil {
		return err
	}
	return c.run()
}

// Capture copies the live /sys; see FS.Capture.
func Capture(dst string) error { return New("").Capture(dst) }

// Bounds of one capture. A rxe device is about 3,100 files (1,024 GID
// slots); 256 such devices stay well inside.
const (
	CaptureMaxFiles = 1 << 20
	CaptureMaxBytes = 256 << 20
	// CaptureReadTimeout bounds one read: sysfs attributes answer in
	// microseconds, counters/ in the time of one MAD to the device.
	CaptureReadTimeout = 5 * time.Second
	// captureMaxTimeouts: after this many abandoned reads the device is
	// not answering; the remaining files are listed, not read.
	captureMaxTimeouts = 4
)

// The files the readers open, by directory (see device.go, port.go,
// gid.go, counters.go, netdev.go and internal/inventory).
var (
	captureDevFiles = []string{"node_type", "node_guid", "sys_image_guid", "fw_ver", "hca_type",
		"hw_rev", "board_id", "node_desc", "parent"}
	capturePortFiles = []string{"state", "phys_state", "rate", "lid", "sm_lid", "lid_mask_count",
		"sm_sl", "cap_mask", "link_layer"}
	// numa_node; the PCIe link (inventory.PCIeLink, doctor's pcie_link).
	capturePCIFiles = []string{"numa_node", "current_link_speed", "current_link_width",
		"max_link_speed", "max_link_width"}
	captureVerbsFiles   = []string{"ibdev", "dev", "abi_version"}
	captureNetdevFiles  = []string{"ifindex", "mtu", "address", "operstate"}
	captureWholeDirs    = []string{"counters", "hw_counters", "pkeys"} // of a port: every file
	captureUnreadableFn = "UNREADABLE"
)

type capturer struct {
	src     string // the source root, symlinks resolved
	dst     string
	read    func(path string) ([]byte, error) // bounded; tests replace it
	timeout time.Duration

	files, bytes, timeouts int
	bounded                bool     // a file was not read: CaptureMaxFiles/Bytes reached
	unreadable             []string // "rel\treason"
	netdevs                map[string]bool
	dirs                   map[string]bool // made under dst
	errs                   []error
}

func newCapturer(src, dst string) (*capturer, error) {
	real, err := filepath.EvalSymlinks(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", src, ErrNoRDMA)
		}
		return nil, err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, err
	}
	// No RDMA class: fail before making dst.
	if _, err := os.Stat(filepath.Join(real, "class", "infiniband")); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoRDMA
	}
	if err := emptyDir(dst); err != nil {
		return nil, err
	}
	return &capturer{src: real, dst: dst, read: readRegular, timeout: CaptureReadTimeout,
		netdevs: map[string]bool{}, dirs: map[string]bool{}}, nil
}

// emptyDir makes dst, or accepts an existing empty directory.
func emptyDir(dst string) error {
	ents, err := os.ReadDir(dst)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dst, 0o755)
	case err != nil:
		return fmt.Errorf("capture into %s: %w", dst, err)
	case len(ents) > 0:
		return &DestNotEmptyError{Dir: dst}
	}
	return nil
}

// DestNotEmptyError: a capture never mixes with or overwrites other files.
type DestNotEmptyError struct{ Dir string }

func (e *DestNotEmptyError) Error() string {
	return fmt.Sprintf("%s exists and is not empty; capture into a new directory", e.Dir)
}

func (c *capturer) run() error {
	ib := filepath.Join(c.src, "class", "infiniband")
	devs, err := c.listDir(ib)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ErrNoRDMA
		}
		return err
	}
	if err := c.mkdir("class/infiniband"); err != nil {
		return err
	}
	for _, d := range devs {
		c.device(d)
	}
	c.verbs()
	c.net()
	return c.finish()
}

// listEntries is ReadDir (sorted by name, each entry with its type from
// the listing itself) of a directory that must not be a symlink.
func (c *capturer) listEntries(dir string) ([]fs.DirEntry, error) {
	if st, err := os.Lstat(dir); err != nil {
		return nil, err
	} else if st.Mode()&fs.ModeSymlink != 0 {
		return nil, errors.New("a symlink where a directory belongs: not followed")
	} else if !st.IsDir() {
		return nil, errors.New("not a directory")
	}
	return os.ReadDir(dir)
}

// listDir is listEntries' names.
func (c *capturer) listDir(dir string) ([]string, error) {
	ents, err := c.listEntries(dir)
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

// resolve follows the symlinks of path (a class entry or a device link)
// and returns where it leads, if that is a directory inside the source
// tree. Anything else is listed as unreadable under rel.
func (c *capturer) resolve(path, rel string) (string, bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		c.skip(rel, err)
		return "", false
	}
	real, err = filepath.Abs(real)
	if err != nil {
		c.skip(rel, err)
		return "", false
	}
	if !inside(c.src, real) {
		c.skipReason(rel, "symlink leads out of the tree (to "+real+")")
		return "", false
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		c.skipReason(rel, "not a directory")
		return "", false
	}
	return real, true
}

func inside(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// device copies class/infiniband/<name>.
func (c *capturer) device(name string) {
	rel := filepath.Join("class", "infiniband", name)
	dir, ok := c.resolve(filepath.Join(c.src, rel), rel)
	if !ok {
		return
	}
	if c.mkdir(rel) != nil {
		return
	}
	for _, f := range captureDevFiles {
		c.copyFile(filepath.Join(dir, f), filepath.Join(rel, f))
	}
	if nd, ok := c.readName(filepath.Join(rel, "parent")); ok {
		c.netdevs[nd] = true
	}
	c.copyDir(filepath.Join(dir, "hw_counters"), filepath.Join(rel, "hw_counters"))
	c.deviceLink(dir, rel)
	ports, err := c.listDir(filepath.Join(dir, "ports"))
	if err != nil {
		return // rdmactl lists no ports either
	}
	for _, p := range ports {
		if _, ok := parseUint(p, 32); ok {
			c.port(filepath.Join(dir, "ports", p), filepath.Join(rel, "ports", p))
		}
	}
}

func (c *capturer) port(dir, rel string) {
	if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
		return
	}
	if c.mkdir(rel) != nil {
		return
	}
	for _, f := range capturePortFiles {
		c.copyFile(filepath.Join(dir, f), filepath.Join(rel, f))
	}
	for _, d := range captureWholeDirs {
		c.copyDir(filepath.Join(dir, d), filepath.Join(rel, d))
	}
	// Every GID slot (gid_tbl_len and --all show the empty ones); the
	// attributes only of populated slots, which the kernel answers. These
	// are most of the files (3 x 1,024 a rxe port) and come from the
	// kernel's GID cache (rdma_get_gid_attr), never from the device, so
	// they are read directly, without the timeout's goroutine.
	gids, err := c.listEntries(filepath.Join(dir, "gids"))
	if err != nil {
		return
	}
	if c.mkdir(filepath.Join(rel, "gids")) != nil {
		return
	}
	attrs := map[string]map[string]fs.FileMode{}
	for _, a := range []string{"types", "ndevs"} {
		attrs[a] = map[string]fs.FileMode{}
		ents, _ := c.listEntries(filepath.Join(dir, "gid_attrs", a))
		for _, e := range ents {
			attrs[a][e.Name()] = e.Type()
		}
	}
	for _, e := range gids {
		i := e.Name()
		b, ok := c.copyEntry(filepath.Join(dir, "gids", i), filepath.Join(rel, "gids", i), e.Type(), true)
		if !ok || emptyGID(string(b)) {
			continue
		}
		for _, a := range []string{"types", "ndevs"} {
			if typ, ok := attrs[a][i]; ok {
				c.copyEntry(filepath.Join(dir, "gid_attrs", a, i), filepath.Join(rel, "gid_attrs", a, i), typ, true)
			}
		}
		if nd, ok := c.readName(filepath.Join(rel, "gid_attrs", "ndevs", i)); ok {
			c.netdevs[nd] = true
		}
	}
}

// emptyGID: the all-zero GID sysfs shows for an empty slot, whose
// gid_attrs the kernel refuses (EINVAL).
func emptyGID(s string) bool {
	s = strings.TrimRight(s, "\n\x00 ")
	return s != "" && strings.Trim(s, "0:") == ""
}

// deviceLink keeps <dev>/device (the PCI function: its name is the PCI
// address, numa_node is read through it) and device/driver (its name is
// the driver's), as relative symlinks to the same places under dst.
func (c *capturer) deviceLink(dir, rel string) {
	pci, pciRel, ok := c.link(filepath.Join(dir, "device"), filepath.Join(rel, "device"))
	if !ok || pci == "" {
		return
	}
	for _, f := range capturePCIFiles {
		c.copyFile(filepath.Join(pci, f), filepath.Join(pciRel, f))
	}
	c.link(filepath.Join(pci, "driver"), filepath.Join(pciRel, "driver"))
}

// link copies the symlink at path to dst/rel, pointing relatively at the
// same place under dst, when its target lies inside the source tree. The
// target directory is made under dst (and returned, with its path in the
// source) when it exists; a dangling link stays dangling, since the
// readers use only the last element of the target. Not a symlink, or
// missing: ok false, nothing listed.
func (c *capturer) link(path, rel string) (target, targetRel string, ok bool) {
	t, err := os.Readlink(path)
	if err != nil {
		return "", "", false
	}
	real, err := filepath.EvalSymlinks(path)
	switch {
	case err == nil:
		if real, err = filepath.Abs(real); err != nil {
			c.skip(rel, err)
			return "", "", false
		}
	case errors.Is(err, fs.ErrNotExist):
		// Dangling: where it would lead, from the link's resolved directory.
		d, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil || filepath.IsAbs(t) {
			c.skipReason(rel, "dangling symlink to "+t)
			return "", "", false
		}
		real = filepath.Join(d, t)
	default:
		c.skip(rel, err) // a loop: ELOOP
		return "", "", false
	}
	if !inside(c.src, real) {
		c.skipReason(rel, "symlink leads out of the tree (to "+real+")")
		return "", "", false
	}
	targetRel, _ = filepath.Rel(c.src, real)
	if st, err := os.Stat(real); err == nil {
		if !st.IsDir() {
			c.skipReason(rel, "symlink to a file, not a directory")
			return "", "", false
		}
		if c.mkdir(targetRel) != nil {
			return "", "", false
		}
		target = real
	}
	if c.symlink(rel, targetRel) != nil {
		return "", "", false
	}
	return target, targetRel, true
}

// verbs copies class/infiniband_verbs: the global ABI and each uverbsN's
// ibdev, dev and abi_version.
func (c *capturer) verbs() {
	dir := filepath.Join(c.src, "class", "infiniband_verbs")
	names, err := c.listDir(dir)
	if err != nil {
		return
	}
	rel := filepath.Join("class", "infiniband_verbs")
	if c.mkdir(rel) != nil {
		return
	}
	c.copyFile(filepath.Join(dir, "abi_version"), filepath.Join(rel, "abi_version"))
	for _, n := range names {
		if !strings.HasPrefix(n, "uverbs") {
			continue
		}
		u, ok := c.resolve(filepath.Join(dir, n), filepath.Join(rel, n))
		if !ok || c.mkdir(filepath.Join(rel, n)) != nil {
			continue
		}
		for _, f := range captureVerbsFiles {
			c.copyFile(filepath.Join(u, f), filepath.Join(rel, n, f))
		}
	}
}

// net copies class/net/<nd> of every netdev a device names (parent,
// gid_attrs/ndevs).
func (c *capturer) net() {
	var nds []string
	for nd := range c.netdevs {
		nds = append(nds, nd)
	}
	slices.Sort(nds)
	for _, nd := range nds {
		rel := filepath.Join("class", "net", nd)
		path := filepath.Join(c.src, rel)
		if _, err := os.Lstat(path); err != nil {
			continue // in another netns, or gone: readers see it missing too
		}
		dir, ok := c.resolve(path, rel)
		if !ok || c.mkdir(rel) != nil {
			continue
		}
		for _, f := range captureNetdevFiles {
			c.copyFile(filepath.Join(dir, f), filepath.Join(rel, f))
		}
	}
}

// readName is the content of a copied file as a netdev name, if it is one
// path element.
func (c *capturer) readName(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(c.dst, rel))
	if err != nil {
		return "", false
	}
	n := TrimAttr(b)
	return n, validName(n)
}

// validName: a name from file content that may become a path element.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && len(n) <= 255 && !strings.ContainsAny(n, "/\x00")
}

// copyDir copies every regular file of dir (not recursive).
func (c *capturer) copyDir(dir, rel string) {
	ents, err := c.listEntries(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.skip(rel, err)
		}
		return
	}
	if c.mkdir(rel) != nil {
		return
	}
	for _, e := range ents {
		c.copyEntry(filepath.Join(dir, e.Name()), filepath.Join(rel, e.Name()), e.Type(), false)
	}
}

// copyFile copies one named file; a missing one is skipped silently (an
// attribute the driver lacks).
func (c *capturer) copyFile(src, rel string) ([]byte, bool) {
	st, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		c.skip(rel, err)
		return nil, false
	}
	return c.copyEntry(src, rel, st.Mode().Type(), false)
}

// copyEntry copies one file of type typ (from Lstat or the directory
// listing) within the bounds: only regular files are opened; a failed
// read is listed. cached: the kernel answers from memory, read without
// the timeout. It returns what it wrote.
func (c *capturer) copyEntry(src, rel string, typ fs.FileMode, cached bool) ([]byte, bool) {
	if !typ.IsRegular() {
		c.skipReason(rel, "not a regular file ("+typ.String()+")")
		return nil, false
	}
	if c.timeouts >= captureMaxTimeouts {
		c.skipReason(rel, "not read: earlier reads timed out")
		return nil, false
	}
	if c.files >= CaptureMaxFiles || c.bytes >= CaptureMaxBytes {
		c.bounded = true
		c.skipReason(rel, "not read: capture bounds reached")
		return nil, false
	}
	var b []byte
	var err error
	if cached {
		b, err = c.read(src)
	} else {
		b, err = c.timedRead(src)
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // gone since the listing
			c.skip(rel, err)
		}
		return nil, false
	}
	if len(b) > MaxRead {
		b = b[:MaxRead]
		c.skipReason(rel, fmt.Sprintf("longer than %d bytes: stored cut there", MaxRead))
	}
	if c.mkdir(filepath.Dir(rel)) != nil {
		return nil, false
	}
	if err := writeNew(filepath.Join(c.dst, rel), b); err != nil {
		c.fail(err)
		return nil, false
	}
	c.files++
	c.bytes += len(b)
	return b, true
}

var errReadTimeout = errors.New("read timed out")

// timedRead runs c.read with c.timeout. A read the kernel blocks keeps its
// goroutine until the kernel answers; capture is a one-shot command, and
// captureMaxTimeouts bounds how many are left behind.
func (c *capturer) timedRead(path string) ([]byte, error) {
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := c.read(path)
		ch <- result{b, err}
	}()
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-t.C:
		c.timeouts++
		return nil, fmt.Errorf("%w after %v", errReadTimeout, c.timeout)
	}
}

// readRegular reads up to MaxRead+1 bytes of a regular file (one more, to
// notice a longer one), without following a symlink or blocking in open on
// a FIFO swapped in since the listing. Plain system calls: an *os.File
// would also try to register the descriptor with the poller (an epoll_ctl
// and fcntls a file, which sysfs refuses), and capture opens thousands.
func readRegular(path string) ([]byte, error) {
	fd, err := ignoringEINTR(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, errors.New("not a regular file")
	}
	var chunk [4096]byte
	var out []byte
	for len(out) <= MaxRead {
		n, err := ignoringEINTR(func() (int, error) { return syscall.Read(fd, chunk[:min(len(chunk), MaxRead+1-len(out))]) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		out = append(out, chunk[:n]...)
	}
	return out, nil
}

// writeNew writes a file that must not exist yet (dst started empty).
func writeNew(path string, b []byte) error {
	fd, err := ignoringEINTR(func() (int, error) {
		return syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644)
	})
	if err != nil {
		return &fs.PathError{Op: "create", Path: path, Err: err}
	}
	for len(b) > 0 {
		n, err := ignoringEINTR(func() (int, error) { return syscall.Write(fd, b) })
		if err != nil {
			syscall.Close(fd)
			return &fs.PathError{Op: "write", Path: path, Err: err}
		}
		b = b[n:]
	}
	if err := syscall.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

func ignoringEINTR(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// mkdir makes dst/rel and its parents, once: the directories made are
// remembered, so that a file costs no stat of its directory.
func (c *capturer) mkdir(rel string) error {
	if c.dirs[rel] {
		return nil
	}
	err := os.MkdirAll(filepath.Join(c.dst, rel), 0o755)
	if err != nil {
		c.fail(err)
		return err
	}
	c.dirs[rel] = true
	return nil
}

// symlink makes dst/rel point at dst/target, relatively.
func (c *capturer) symlink(rel, target string) error {
	t, err := filepath.Rel(filepath.Dir(filepath.Join(c.dst, rel)), filepath.Join(c.dst, target))
	if err == nil {
		err = os.Symlink(t, filepath.Join(c.dst, rel))
	}
	if err != nil {
		c.fail(err)
	}
	return err
}

func (c *capturer) skip(rel string, err error) {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is already in the line
	}
	c.skipReason(rel, err.Error())
}

func (c *capturer) skipReason(rel, why string) {
	c.unreadable = append(c.unreadable, rel+"\t"+why)
}

// fail records a failure to write dst: the capture goes on (the rest may
// be useful) and reports it at the end.
func (c *capturer) fail(err error) {
	if len(c.errs) < 8 {
		c.errs = append(c.errs, err)
	}
}

func (c *capturer) finish() error {
	slices.Sort(c.unreadable)
	var b strings.Builder
	for _, l := range c.unreadable {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(c.dst, captureUnreadableFn), []byte(b.String()), 0o644); err != nil {
		c.fail(err)
	}
	switch {
	case len(c.errs) > 0:
		return fmt.Errorf("capture into %s: %w", c.dst, errors.Join(c.errs...))
	case c.timeouts > 0:
		return fmt.Errorf("capture into %s is incomplete: %d sysfs reads timed out (see %s)", c.dst, c.timeouts,
			filepath.Join(c.dst, captureUnreadableFn))
	case c.bounded:
		return fmt.Errorf("capture into %s is incomplete: stopped at %d files, %d bytes", c.dst, c.files, c.bytes)
	}
	return nil
}
