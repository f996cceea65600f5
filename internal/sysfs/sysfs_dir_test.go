package sysfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
