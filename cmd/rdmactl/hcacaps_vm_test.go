//go:build vmtest

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// TestVMHCACapsOnRxe: on the VM's rxe0 (no ConnectX), `dev hca-caps rxe0`
// fails with one line naming the driver it found, exit code 5; the driver
// is checked against what `rdma -j dev show` reports for the device.
func TestVMHCACapsOnRxe(t *testing.T) {
	var devs []struct {
		Ifname string `json:"ifname"`
	}
	if err := json.Unmarshal([]byte(vmRun(t, "rdma", "-j", "dev", "show", "rxe0")), &devs); err != nil || len(devs) != 1 {
		t.Fatalf("rdma -j dev show rxe0: %v %v", devs, err)
	}
	stdout, stderr, code := runCmd(t, "dev", "hca-caps", "rxe0")
	if code != cmdutil.ExitUnsupported {
		t.Errorf("exit code %d, want %d (exitUnsupported)", code, cmdutil.ExitUnsupported)
	}
	want := "rdmactl: rxe0 is not an mlx5 (ConnectX) device: its driver is rxe; hca-caps needs an mlx5 (ConnectX) device\n"
	if stderr != want || stdout != "" {
		t.Errorf("stdout %q stderr %q, want stderr %q", stdout, stderr, want)
	}

	// No mlx5 device at all: naming one is "not found", listing is "unsupported".
	_, stderr, code = runCmd(t, "dev", "hca-caps", "mlx5_0")
	if code != cmdutil.ExitNotFound || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `"mlx5_0" not found`) {
		t.Errorf("mlx5_0: code %d stderr %q", code, stderr)
	}
	_, stderr, code = runCmd(t, "dev", "hca-caps")
	if code != cmdutil.ExitUnsupported || !strings.HasPrefix(stderr, "rdmactl: no mlx5 (ConnectX) device: found only rxe0 (rxe)") {
		t.Errorf("no DEV: code %d stderr %q", code, stderr)
	}
}
