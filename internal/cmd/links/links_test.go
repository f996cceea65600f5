package links

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMake: every name made once; made again, present; a name another
// file has is kept as it is.
func TestMake(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "ibv_devinfo")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, kept, err := Make(dir, "/opt/rdmactl")
	if err != nil || kept != 1 || len(out) != 12 {
		t.Fatalf("%+v %d %v", out, kept, err)
	}
	for _, l := range out {
		want := "created"
		if l.Name == "ibv_devinfo" {
			want = "kept"
		}
		if l.Status != want {
			t.Errorf("%s: %s, want %s", l.Name, l.Status, want)
		}
	}
	if b, _ := os.ReadFile(other); string(b) != "#!/bin/sh\n" {
		t.Errorf("the existing file changed: %q", b)
	}
	if tgt, err := os.Readlink(filepath.Join(dir, "ibv_devices")); err != nil || tgt != "/opt/rdmactl" {
		t.Errorf("ibv_devices -> %q, %v", tgt, err)
	}
	out, kept, err = Make(dir, "/opt/rdmactl")
	if err != nil || kept != 1 || out[0].Status != "present" {
		t.Errorf("again: %+v %d %v", out, kept, err)
	}
	if _, _, err := Make(filepath.Join(dir, "missing"), "/opt/rdmactl"); err == nil {
		t.Error("no error in a missing directory")
	}
}
