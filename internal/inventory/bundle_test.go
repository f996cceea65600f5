package inventory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// TestCapturedNLDump: a capture with rdmactl/nldev.json gives the
// netlink-only facts offline (index, protocol, caps, driver id, netns
// mode, NLDEV statistics); without it they stay absent.
func TestCapturedNLDump(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cap")
	if err := sysfs.New(rxeTree).Capture(root); err != nil {
		t.Fatal(err)
	}
	plain := Captured(root)
	ds, err := plain.Devices("rxe1", DeviceOptions{Chardev: true})
	if err != nil || len(ds) != 1 || ds[0].Index != nil || ds[0].Protocol != "" {
		t.Fatalf("without a dump: %+v, %v", ds, err)
	}
	if _, err := plain.System(); err == nil {
		t.Error("without a dump: System answered")
	}

	os.MkdirAll(filepath.Join(root, "rdmactl"), 0o755)
	dump := `{"devices":[{"index":7,"name":"rxe1","protocol":"roce","caps":1024,"dim":false,
	  "uverbs":{"name":"uverbs1","driver_id":14},
	  "ports":[{"port":1,"state":4,"caps":65536,"statistics":[{"name":"sent_pkts","value":42},{"name":"link_downed","value":1}]}]}],
	 "system":{"netns_shared":true}}`
	os.WriteFile(filepath.Join(root, NLDumpFile), []byte(dump), 0o644)
	src := Captured(root)
	ds, err = src.Devices("", DeviceOptions{Chardev: true})
	if err != nil || len(ds) != 2 {
		t.Fatalf("%+v, %v", ds, err)
	}
	for _, d := range ds {
		switch d.Name {
		case "rxe1":
			if d.Index == nil || *d.Index != 7 || d.Protocol != "roce" || d.Caps == nil || *d.Caps != 1024 || d.DriverID == nil || *d.DriverID != 14 {
				t.Errorf("rxe1: %+v", d)
			}
		case "rxe0": // not in the dump
			if d.Index != nil || d.Protocol != "" {
				t.Errorf("rxe0: %+v", d)
			}
		}
	}
	if src.NetnsMode() != "shared" {
		t.Errorf("netns mode %q", src.NetnsMode())
	}
	if st, err := src.System(); err != nil || st.NetnsMode != "shared" {
		t.Errorf("System: %+v, %v", st, err)
	}
	ps, err := src.Ports("rxe1", 1, PortOptions{})
	if err != nil || len(ps) != 1 || ps[0].DevIndex == nil || *ps[0].DevIndex != 7 || ps[0].Caps == nil {
		t.Errorf("ports: %+v, %v", ps, err)
	}
	refs, _ := src.Targets("rxe1", 0)
	sets, err := src.Counters(refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nl, hw int
	for _, s := range sets {
		switch s.Source {
		case SrcNetlink:
			nl++
			if len(s.Counters) != 2 || s.Counters[0].Name != "link_downed" {
				t.Errorf("netlink set %+v", s)
			}
		case SrcHWCounters:
			if s.Port != 0 {
				hw++
			}
		}
	}
	// As live: the port's hw_counters come from netlink where it answered.
	if nl != 1 || hw != 0 {
		t.Errorf("%d netlink sets, %d port hw_counters sets; want 1 and 0", nl, hw)
	}

	// A broken dump counts as none.
	os.WriteFile(filepath.Join(root, NLDumpFile), []byte("{"), 0o644)
	if ds, _ := Captured(root).Devices("rxe1", DeviceOptions{}); len(ds) != 1 || ds[0].Index != nil {
		t.Errorf("broken dump: %+v", ds)
	}
}

// FuzzParseNLDump: the dump comes from another host.
func FuzzParseNLDump(f *testing.F) {
	f.Add([]byte(`{"devices":[{"index":1,"name":"a","ports":[{"port":1,"statistics":[{"name":"x","value":1}]}]}],"system":null}`))
	f.Add([]byte(`{"devices":[{"name":""}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseNLDump(b)
		if err == nil {
			for _, dd := range d.Devices {
				if dd.Name == "" {
					t.Fatal("a nameless device passed")
				}
			}
		}
	})
}
