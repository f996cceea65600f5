package sysfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// TestCaptureFixtures: a capture of each fixture tree reads back, through
// every reader of this package, exactly as the tree itself. A reader of a
// file the capture does not copy fails here.
func TestCaptureFixtures(t *testing.T) {
	for _, root := range []string{rxeRoot, mlx5Root} {
		dst := filepath.Join(t.TempDir(), "cap")
		if err := New(root).Capture(dst); err != nil {
			t.Fatalf("%s: Capture: %v", root, err)
		}
		a, b := New(root), New(dst)
		same := func(what string, x, y any) {
			t.Helper()
			if !reflect.DeepEqual(x, y) {
				t.Errorf("%s: %s:\n tree    %+v\n capture %+v", root, what, x, y)
			}
		}
		devs, err := a.Devices()
		if err != nil {
			t.Fatal(err)
		}
		devs2, err := b.Devices()
		same("Devices", devs, devs2)
		same("Devices err", err, nil)
		same("UverbsABIVersion", a.UverbsABIVersion(), b.UverbsABIVersion())
		netdevs := map[string]bool{}
		for _, d := range devs {
			x, _ := a.Device(d)
			y, _ := b.Device(d)
			same("Device "+d, x, y)
			netdevs[x.Parent] = true
			for _, p := range x.Ports {
				pa, _ := a.Port(d, p)
				pb, _ := b.Port(d, p)
				same("Port", pa, pb)
				ga, _ := a.GIDs(d, p)
				gb, _ := b.GIDs(d, p)
				same("GIDs", ga, gb)
				for _, g := range ga {
					netdevs[g.Netdev] = true
				}
				ca, _ := a.Counters(d, p)
				cb, _ := b.Counters(d, p)
				same("Counters", ca, cb)
				ha, _ := a.HWCounters(d, p)
				hb, _ := b.HWCounters(d, p)
				same("HWCounters", ha, hb)
				same("HWCountersLifespan", a.HWCountersLifespan(d, p), b.HWCountersLifespan(d, p))
			}
			ha, _ := a.HWCounters(d, 0)
			hb, _ := b.HWCounters(d, 0)
			same("device HWCounters", ha, hb)
		}
		for nd := range netdevs {
			if nd != "" {
				same("Netdev "+nd, a.Netdev(nd), b.Netdev(nd))
			}
		}
		// Files the fixture lacks only because the readers do not read them.
		un, err := os.ReadFile(filepath.Join(dst, "UNREADABLE"))
		if err != nil || len(un) != 0 {
			t.Errorf("%s: UNREADABLE %q, %v; want an empty file", root, un, err)
		}
	}
}

// hostile builds a tree under dir/root with what a broken or malicious
// capture source can hold, and a secret next to it that must not leak.
func hostile(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	write := func(rel, s string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rel, target string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(outside, "net", "eth9"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "net", "eth9", "mtu"), []byte("SECRET\n"), 0o644)

	// dev0: the real device directory lives under devices/, as on a live
	// system, with a PCI parent whose driver link resolves.
	d0 := "devices/pci0000:00/0000:01:00.0/infiniband/dev0"
	link("class/infiniband/dev0", "../../"+d0)
	write(d0+"/node_guid", "0002:c903:0001:0002\n")
	write(d0+"/node_type", "1: CA\n")
	write(d0+"/fw_ver", "1.2.3\n") // the read hook fails it with EINVAL
	write(d0+"/parent", "../../../outside/net/eth9\n")
	link(d0+"/board_id", "/etc/passwd")
	link(d0+"/device", "../../../0000:01:00.0")
	write("devices/pci0000:00/0000:01:00.0/numa_node", "1\n")
	write("devices/pci0000:00/0000:01:00.0/vendor", "0x15b3\n") // not read by rdmactl: not copied
	link("devices/pci0000:00/0000:01:00.0/driver", "../../../bus/pci/drivers/mlx5_core")
	if err := os.MkdirAll(filepath.Join(root, "bus/pci/drivers/mlx5_core"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, d0, "hca_type"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An endless file: 1 GiB (sparse); only MaxRead of it may be read.
	f, err := os.Create(filepath.Join(root, d0, "node_desc"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	p0 := d0 + "/ports/1"
	write(p0+"/state", "4: ACTIVE\n")
	write(p0+"/link_layer", "Ethernet\n")
	write(p0+"/gids/0", "fe80:0000:0000:0000:0202:c9ff:fe01:0002\n")
	write(p0+"/gids/1", "0000:0000:0000:0000:0000:0000:0000:0000\n")
	write(p0+"/gid_attrs/types/0", "RoCE v2\n")
	write(p0+"/gid_attrs/ndevs/0", "eth9\n")
	write(p0+"/gid_attrs/types/1", "must not be read\n")
	link(p0+"/counters", "/etc")                      // a directory symlink out of the tree
	link(p0+"/hw_counters", "../../../../../outside") // and a relative one
	link("class/net/eth9", "../../../outside/net/eth9")

	// dev1: device link out of the tree; driver loop on dev2.
	write("class/infiniband/dev1/node_type", "1: CA\n")
	link("class/infiniband/dev1/device", "../../../../outside")
	write("class/infiniband/dev2/node_type", "1: CA\n")
	link("class/infiniband/dev2/device", "../../../devices/pci0000:00/0000:02:00.0")
	link("devices/pci0000:00/0000:02:00.0/driver", "driver")
	// Class entries that loop or leave the tree.
	link("class/infiniband/loop", "loop")
	link("class/infiniband/abs", "/etc")
	link("class/infiniband/up", "../../..")
	// uverbs: one good, one leading out.
	write("devices/virtual/infiniband_verbs/uverbs0/ibdev", "dev0\n")
	link("class/infiniband_verbs/uverbs0", "../../devices/virtual/infiniband_verbs/uverbs0")
	link("class/infiniband_verbs/uverbs1", "../../../outside")
	return root, outside
}

func TestCaptureHostileTree(t *testing.T) {
	root, outside := hostile(t)
	dst := filepath.Join(t.TempDir(), "cap")
	c, err := newCapturer(root, dst)
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	c.read = func(p string) ([]byte, error) {
		reads = append(reads, p)
		if filepath.Base(p) == "fw_ver" {
			return nil, &fs.PathError{Op: "read", Path: p, Err: syscall.EINVAL}
		}
		return readRegular(p)
	}
	done := make(chan error, 1)
	go func() { done <- c.run() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Capture blocked (on the FIFO?)")
	}
	if err != nil {
		t.Fatalf("Capture: %v; unreadable files must not fail it", err)
	}
	for _, p := range reads {
		if !strings.HasPrefix(p, root+"/") {
			t.Errorf("read %s, outside the tree", p)
		}
		if strings.Contains(p, "gid_attrs/types/1") {
			t.Errorf("read %s, the attribute of an empty GID slot", p)
		}
	}

	// Nothing of outside reached the copy, and every symlink stays in it.
	filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Errorf("walk: %v", err)
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			tgt, _ := os.Readlink(p)
			if filepath.IsAbs(tgt) || !strings.HasPrefix(filepath.Join(filepath.Dir(p), tgt), dst+"/") {
				t.Errorf("%s -> %s leads out of the copy", p, tgt)
			}
		} else if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			if bytes.Contains(b, []byte("SECRET")) {
				t.Errorf("%s holds a file from outside the tree", p)
			}
		} else if !d.IsDir() {
			t.Errorf("%s: %v in the copy", p, d.Type())
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(outside, "secret")); err != nil || string(b) != "SECRET\n" {
		t.Errorf("outside was touched: %q %v", b, err)
	}

	un, _ := os.ReadFile(filepath.Join(dst, "UNREADABLE"))
	for _, want := range []string{
		"class/infiniband/dev0/fw_ver\tinvalid argument",
		"class/infiniband/dev0/node_desc\tlonger than 65536 bytes",
		"class/infiniband/dev0/hca_type\tnot a regular file",
		"class/infiniband/dev0/board_id\tnot a regular file",
		"class/infiniband/dev0/ports/1/counters\ta symlink where a directory belongs: not followed",
		"class/infiniband/dev0/ports/1/hw_counters\ta symlink where a directory belongs: not followed",
		"class/infiniband/dev1/device\tsymlink leads out of the tree",
		"devices/pci0000:00/0000:02:00.0/driver\tEvalSymlinks: too many links",
		"class/infiniband/loop\tEvalSymlinks: too many links",
		"class/infiniband/abs\tsymlink leads out of the tree",
		"class/infiniband/up\tsymlink leads out of the tree",
		"class/infiniband_verbs/uverbs1\tsymlink leads out of the tree",
		"class/net/eth9\tsymlink leads out of the tree",
	} {
		if !strings.Contains(string(un), want) {
			t.Errorf("UNREADABLE lacks %q:\n%s", want, un)
		}
	}

	// What could be read reads back.
	f := New(dst)
	d, err := f.Device("dev0")
	if err != nil {
		t.Fatal(err)
	}
	if d.NodeGUID != "0002:c903:0001:0002" || d.PCIAddr != "0000:01:00.0" || d.Driver != "mlx5_core" ||
		d.NUMANode == nil || *d.NUMANode != 1 || d.FWVer != "" || d.HCAType != "" || d.BoardID != "" || d.Uverbs != "uverbs0" {
		t.Errorf("dev0 from the copy: %+v", d)
	}
	if st, err := os.Stat(filepath.Join(dst, "class/infiniband/dev0/node_desc")); err != nil || st.Size() != MaxRead {
		t.Errorf("node_desc: %v, %v; want the first %d bytes", st, err, MaxRead)
	}
	if _, err := os.Stat(filepath.Join(dst, "devices/pci0000:00/0000:01:00.0/vendor")); err == nil {
		t.Error("vendor was copied: the capture holds only what rdmactl reads")
	}
	gids, _ := f.GIDs("dev0", 1)
	if len(gids) != 2 || gids[0].Kind != vocab.GIDTypeRoCEv2 || gids[0].Netdev != "eth9" || !gids[1].Empty() {
		t.Errorf("dev0/1 GIDs from the copy: %+v", gids)
	}
	devs, _ := f.Devices()
	if !reflect.DeepEqual(devs, []string{"dev0", "dev1", "dev2"}) {
		t.Errorf("devices in the copy: %v", devs)
	}
	if d, _ := f.Device("dev1"); d == nil || d.PCIAddr != "" {
		t.Errorf("dev1 from the copy: %+v (its device link left the tree)", d)
	}
}

// TestCaptureBlockingRead: a read the kernel never answers is abandoned
// after the timeout; after captureMaxTimeouts the rest is listed, not
// read, and the capture says it is incomplete.
func TestCaptureBlockingRead(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "cap")
	c, err := newCapturer(mlx5Root, dst)
	if err != nil {
		t.Fatal(err)
	}
	c.timeout = 20 * time.Millisecond
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	blocked := 0
	c.read = func(p string) ([]byte, error) {
		if strings.Contains(p, "/counters/") { // PMA counters: a MAD each
			<-never
		}
		return readRegular(p)
	}
	start := time.Now()
	err = c.run()
	if err == nil || !strings.Contains(err.Error(), "incomplete") || !strings.Contains(err.Error(), "4 sysfs reads timed out") {
		t.Fatalf("Capture: %v; want it to say 4 reads timed out", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Capture took %v", d)
	}
	un, _ := os.ReadFile(filepath.Join(dst, "UNREADABLE"))
	blocked = strings.Count(string(un), "read timed out")
	if blocked != captureMaxTimeouts || !strings.Contains(string(un), "not read: earlier reads timed out") {
		t.Errorf("UNREADABLE: %d timeouts, want %d, then the rest not read:\n%s", blocked, captureMaxTimeouts, un)
	}
	// What was read before is there.
	if d, err := New(dst).Device("mlx5_0"); err != nil || d.NodeGUID == "" {
		t.Errorf("mlx5_0 from the partial copy: %+v, %v", d, err)
	}
}

func TestCaptureRefuses(t *testing.T) {
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "x"), nil, 0o644)
	var ne *DestNotEmptyError
	if err := New(rxeRoot).Capture(dst); !errors.As(err, &ne) {
		t.Errorf("Capture into a non-empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "class")); err == nil {
		t.Error("Capture wrote into a non-empty directory")
	}
	for _, src := range []string{t.TempDir(), filepath.Join(t.TempDir(), "nosuch")} {
		out := filepath.Join(t.TempDir(), "cap")
		if err := New(src).Capture(out); !errors.Is(err, ErrNoRDMA) {
			t.Errorf("Capture of %s (no class/infiniband): %v, want ErrNoRDMA", src, err)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("Capture of %s made %s, with nothing to copy", src, out)
		}
	}
	// An existing empty directory is fine.
	if err := New(rxeRoot).Capture(t.TempDir()); err != nil {
		t.Errorf("Capture into an empty directory: %v", err)
	}
}

func TestReadRegularBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	f, _ := os.Create(p)
	f.Truncate(1 << 30)
	f.Close()
	b, err := readRegular(p)
	if err != nil || len(b) != MaxRead+1 {
		t.Errorf("readRegular of 1 GiB: %d bytes, %v; want %d", len(b), err, MaxRead+1)
	}
	l := filepath.Join(t.TempDir(), "l")
	os.Symlink(p, l)
	if _, err := readRegular(l); err == nil {
		t.Error("readRegular followed a symlink")
	}
}

// FuzzCaptureNames: a name taken from file content (parent,
// gid_attrs/ndevs) is used as a path element only when it is exactly one;
// emptyGID agrees with the GID parser on what is all zeros.
func FuzzCaptureNames(f *testing.F) {
	for _, s := range []string{"vrxe0", "eth0.100", "..", ".", "", "a/b", "../../etc", "x\x00y",
		"0000:0000:0000:0000:0000:0000:0000:0000", "0000:0000:0000:0000:0000:0000:0000:0000\n",
		"fe80:0000:0000:0000:0202:c9ff:fe01:0002", "0", "::", strings.Repeat("a", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validName(s) {
			p := filepath.Join("/d", s)
			if filepath.Dir(p) != "/d" || filepath.Base(p) != s {
				t.Fatalf("validName(%q) but it joins to %q", s, p)
			}
		}
		raw, ok := parseGID(strings.TrimRight(s, "\n\x00 "))
		if ok && (raw == [16]byte{}) != emptyGID(s) {
			t.Fatalf("emptyGID(%q) = %v, parseGID gives %x", s, emptyGID(s), raw)
		}
	})
}
