//go:build vmtest

package vmcheck

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// The devices vm/run creates by default.
var wantDevices = []string{"rxe0", "rxe1"}

func TestSysfsDevices(t *testing.T) {
	for _, d := range wantDevices {
		st, err := os.ReadFile("/sys/class/infiniband/" + d + "/ports/1/state")
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if !strings.Contains(string(st), "ACTIVE") {
			t.Errorf("%s port 1 state %q, want ACTIVE", d, strings.TrimSpace(string(st)))
		}
	}
}

// TestRdmaDevShow checks the reference tool sees both devices over netlink.
func TestRdmaDevShow(t *testing.T) {
	out, err := exec.Command("rdma", "-j", "dev", "show").Output()
	if err != nil {
		t.Fatalf("rdma -j dev show: %v", err)
	}
	var devs []struct {
		Ifname string `json:"ifname"`
	}
	if err := json.Unmarshal(out, &devs); err != nil {
		t.Fatalf("rdma -j dev show: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, d := range devs {
		seen[d.Ifname] = true
	}
	for _, d := range wantDevices {
		if !seen[d] {
			t.Errorf("rdma -j dev show does not list %s: %s", d, out)
		}
	}
}

// TestGuestEnvironment checks what kernel tests rely on besides devices:
// root, unlimited locked memory, uverbs nodes, the reference tools and the
// rdmactl binary that make vmtest builds.
func TestGuestEnvironment(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Errorf("euid %d, want root", os.Geteuid())
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(8 /* RLIMIT_MEMLOCK */, &rl); err != nil {
		t.Errorf("getrlimit: %v", err)
	} else if rl.Cur != ^uint64(0) {
		t.Errorf("RLIMIT_MEMLOCK %d, want unlimited", rl.Cur)
	}
	for _, f := range []string{"/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	for _, tool := range []string{"rdma", "ibv_devinfo", "ib_write_bw", "ibstat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Errorf("reference tool: %v", err)
		}
	}
	if os.Getenv("RDMACTL_VM") != "1" {
		t.Errorf("RDMACTL_VM=%q, want 1", os.Getenv("RDMACTL_VM"))
	}
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set")
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil {
		t.Errorf("%s version: %v\n%s", bin, err, out)
	}
}
