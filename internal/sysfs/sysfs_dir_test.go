package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDir: files and links read relative to an opened directory, and by
// full path (PathDir), as ReadBounded and LinkBase read them.
func TestDir(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "rxe0")
	if err := os.MkdirAll(filepath.Join(root, "devices", "0000:03:00.0", "driver_x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "hw_rev"), []byte("0x0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dev, "big"), []byte(strings.Repeat("x", 3*MaxRead)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../devices/0000:03:00.0", filepath.Join(dev, "device")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("driver_x", filepath.Join(root, "devices", "0000:03:00.0", "driver")); err != nil {
		t.Fatal(err)
	}
	opened, err := OpenDir(dev)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*Dir{"OpenDir": opened, "PathDir": PathDir(dev)} {
		t.Run(name, func(t *testing.T) { checkDir(t, d, dev) })
		if err := d.Close(); err != nil {
			t.Errorf("%s: Close: %v", name, err)
		}
	}
	if _, err := OpenDir(filepath.Join(root, "nosuch")); err == nil {
		t.Error("OpenDir of a missing directory: no error")
	}
	gone := PathDir(filepath.Join(root, "nosuch"))
	if v, l := gone.String("hw_rev"), gone.LinkBase("device"); v != "" || l != "" {
		t.Errorf("PathDir of a missing directory: hw_rev %q, device link %q", v, l)
	}
}

func checkDir(t *testing.T, d *Dir, dev string) {
	t.Helper()
	if b, err := d.Read("hw_rev"); err != nil || string(b) != "0x0\n" {
		t.Errorf("hw_rev: %q %v", b, err)
	}
	if v, w := d.String("hw_rev"), d.String("nosuch"); v != "0x0" || w != "" {
		t.Errorf("String: hw_rev %q, a missing file %q", v, w)
	}
	if b, err := d.Read("big"); err != nil || len(b) != MaxRead {
		t.Errorf("a huge file: %d bytes, %v; want the first %d", len(b), err, MaxRead)
	}
	if _, err := d.Read("nosuch"); err == nil || !strings.Contains(err.Error(), filepath.Join(dev, "nosuch")) {
		t.Errorf("missing file: %v", err)
	}
	if a, b := d.LinkBase("device"), LinkBase(filepath.Join(dev, "device")); a != "0000:03:00.0" || a != b {
		t.Errorf("device link: %q, by full path %q", a, b)
	}
	if a := d.LinkBase("device/driver"); a != "driver_x" {
		t.Errorf("driver link through the device link: %q", a)
	}
	if a := d.LinkBase("hw_rev"); a != "" {
		t.Errorf("a file as a link: %q", a)
	}
}

// TestCapturedTreeRefusesOutsideFiles: in a captured tree a read ends on a
// regular file inside the tree, or is refused: a symlink to a file outside
// (board_id -> /etc/hostname), a FIFO where a port's state is (which would
// block a plain open forever), a device node. Links inside the tree are
// followed as before, and the fields that were refused are missing.
func TestCapturedTreeRefusesOutsideFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/mlx5")); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(root, "class", "infiniband", "mlx5_0")
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("do not print me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustReplace := func(p string, mk func(string) error) {
		t.Helper()
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := mk(p); err != nil {
			t.Fatal(err)
		}
	}
	mustReplace(filepath.Join(dev, "board_id"), func(p string) error { return os.Symlink(secret, p) })
	mustReplace(filepath.Join(dev, "hca_type"), func(p string) error { return os.Symlink("../../../../"+filepath.Base(root)+"/../x", p) })
	mustReplace(filepath.Join(dev, "fw_ver"), func(p string) error { return os.Symlink("/dev/zero", p) })
	mustReplace(filepath.Join(dev, "ports", "1", "state"), func(p string) error { return unix.Mkfifo(p, 0o644) })

	f := New(root)
	done := make(chan struct{})
	var d *Device
	var p *Port
	var derr, perr error
	go func() {
		defer close(done)
		d, derr = f.Device("mlx5_0")
		p, perr = f.Port("mlx5_0", 1)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a captured tree with a FIFO in it still blocks after 10 s")
	}
	if derr != nil || perr != nil {
		t.Fatalf("Device: %v; Port: %v", derr, perr)
	}
	if d.BoardID != "" || d.HCAType != "" || d.FWVer != "" {
		t.Errorf("board_id %q, hca_type %q, fw_ver %q: read through links out of the tree", d.BoardID, d.HCAType, d.FWVer)
	}
	if d.NodeGUID == "" {
		t.Error("node_guid, a plain file of the tree, is missing")
	}
	if p.State != "" {
		t.Errorf("port state %q from a FIFO", p.State)
	}
	// A link inside the tree still works: the device's PCI parent.
	if _, err := ReadBounded(filepath.Join(dev, "device", "vendor")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file behind a link inside the tree: %v", err)
	}
	for _, name := range []string{"board_id", "fw_ver"} {
		if _, err := ReadBounded(filepath.Join(dev, name)); err == nil {
			t.Errorf("%s read", name)
		}
	}
}

// TestCapturedTreeSkipsBadEntries: a dangling link, a stray file and a
// link loop among the devices, a port directory 0 and a file among the
// ports are skipped with one warning each; the rest is listed, and what
// is listed is found.
func TestCapturedTreeSkipsBadEntries(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/mlx5")); err != nil {
		t.Fatal(err)
	}
	ib := filepath.Join(root, "class", "infiniband")
	for _, err := range []error{
		os.Symlink("../../nowhere", filepath.Join(ib, "mlx5_2")),
		os.WriteFile(filepath.Join(ib, "mlx5_3"), []byte("x\n"), 0o644),
		os.Symlink("mlx5_4", filepath.Join(ib, "mlx5_4")),
		os.Mkdir(filepath.Join(ib, "mlx5_0", "ports", "0"), 0o755),
		os.WriteFile(filepath.Join(ib, "mlx5_0", "ports", "2"), nil, 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	f := New(root)
	f.Warn = func(s string) { warned = append(warned, s) }
	for range 2 { // warnings once per entry, however often it is listed
		names, err := f.Devices()
		if err != nil || strings.Join(names, ",") != "mlx5_0,mlx5_1" {
			t.Fatalf("Devices: %v %v", names, err)
		}
		for _, n := range names {
			ports, err := f.PortNumbers(n)
			if err != nil || len(ports) != 1 || ports[0] != 1 {
				t.Fatalf("%s ports: %v %v", n, ports, err)
			}
			if err := f.CheckPort(n, ports[0]); err != nil {
				t.Errorf("%s/%d listed but not found: %v", n, ports[0], err)
			}
		}
	}
	if len(warned) != 5 {
		t.Errorf("%d warnings, want 5 (one per bad entry): %q", len(warned), warned)
	}
	for _, w := range warned {
		if !strings.HasSuffix(w, ", skipped") || !strings.HasPrefix(w, root) {
			t.Errorf("warning %q", w)
		}
	}
}
