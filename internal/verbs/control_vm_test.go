//go:build vmtest

package verbs

import (
	"testing"
)

// TestVMOpenQuery opens every rxe device both ways (ioctl and write-only)
// and checks the answers agree.
func TestVMOpenQuery(t *testing.T) {
	devs, err := Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 2 {
		t.Fatalf("want rxe0 and rxe1, got %+v", devs)
	}
	for _, d := range devs {
		t.Logf("device %+v", d)
		var prev *DeviceAttr
		var prevPort *PortAttr
		for _, force := range []bool{false, true} {
			c, err := OpenDevice(d, Options{ForceWrite: force})
			if err != nil {
				t.Fatalf("open %s force=%v: %v", d.Name, force, err)
			}
			if c.UsesIoctl() == force {
				t.Errorf("%s: UsesIoctl %v with ForceWrite %v", d.Name, c.UsesIoctl(), force)
			}
			a, err := c.QueryDevice()
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			t.Logf("%s ioctl=%v ncv=%d attr %+v", d.Name, c.UsesIoctl(), c.NumCompVectors(), *a)
			p, err := c.QueryPort(1)
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			t.Logf("port %+v", *p)
			if prev != nil && *prev != *a {
				t.Errorf("%s: device attrs differ between paths:\n%+v\n%+v", d.Name, *prev, *a)
			}
			if prevPort != nil && *prevPort != *p {
				t.Errorf("%s: port attrs differ between paths:\n%+v\n%+v", d.Name, *prevPort, *p)
			}
			prev, prevPort = a, p
			if _, err := c.QueryPort(2); !IsNotFound(err) {
				t.Errorf("%s: port 2: want PortNotFoundError, got %v", d.Name, err)
			}
			g, err := c.QueryGIDTable(int(p.GIDTblLen))
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			for _, e := range g {
				t.Logf("gid %+v %v", e, e.Addr())
			}
			pd, err := c.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			buf, err := NewBuffer(1 << 16)
			if err != nil {
				t.Fatal(err)
			}
			mr, err := pd.RegMR(buf, AccessAll)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("pd %d mr %d lkey %#x rkey %#x", pd.Handle, mr.Handle, mr.LKey, mr.RKey)
			if err := buf.Close(); err == nil {
				t.Errorf("buffer closed under a live MR")
			}
			if err := pd.Close(); err == nil {
				t.Errorf("PD closed under a live MR")
			}
			if err := mr.Close(); err != nil {
				t.Fatal(err)
			}
			if err := pd.Close(); err != nil {
				t.Fatal(err)
			}
			if err := buf.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
