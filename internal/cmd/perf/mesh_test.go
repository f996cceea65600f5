package perf

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// TestMeshDryRun: from a host file, --dry-run prints who this rank is,
// where rank 0 is, its exchange ports (16 a rank before it on its host)
// and its tests in each round, and starts nothing.
func TestMeshDryRun(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hosts, []byte("# two racks\nh0\nh1 slots=2\nh2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cmdtest.Run(t, NewCmd, "-j", "perf", "mesh", "write", "--hosts", hosts, "--rank", "2", "--devices", "mlx5_0,mlx5_1",
		"--device-per-rank", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Launcher    string   `json:"launcher"`
		Rank        int      `json:"rank"`
		Size        int      `json:"size"`
		LocalRank   int      `json:"local_rank"`
		Hosts       []string `json:"hosts"`
		Coordinator string   `json:"coordinator"`
		Devices     []string `json:"devices"`
		Port        int      `json:"port"`
		Rounds      int      `json:"rounds"`
		Mine        [][]struct {
			Src struct{ Rank, Dev int } `json:"src"`
			Dst struct{ Rank, Dev int } `json:"dst"`
		} `json:"my_tests"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Launcher != "hostfile" || got.Rank != 2 || got.Size != 4 || got.LocalRank != 1 || strings.Join(got.Hosts, " ") != "h0 h1 h1 h2" ||
		got.Coordinator != "h0:18600" || strings.Join(got.Devices, ",") != "mlx5_1" || got.Port != 18716 || got.Rounds != 3 {
		t.Errorf("plan %+v", got)
	}
	n := 0
	for _, r := range got.Mine {
		for _, ts := range r {
			if ts.Src.Rank != 2 && ts.Dst.Rank != 2 {
				t.Errorf("round test %+v is not rank 2's", ts)
			}
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d tests for rank 2, want 3 (one with each other rank)", n)
	}
}

// TestMeshBadInput: each refusal is one line with its exit code.
func TestMeshBadInput(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("a\nb\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"perf", "mesh", "write", "--dry-run"}, cmdutil.ExitUsage, "no launcher found"},
		{[]string{"perf", "mesh", "atomic", "--hosts", hosts, "--rank", "0", "--devices", "x", "--dry-run"}, cmdutil.ExitUsage, "want send, write or read"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "5", "--devices", "x", "--dry-run"}, cmdutil.ExitUsage, "--rank 0 to 1"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "0", "--devices", "x", "--pattern", "star", "--dry-run"}, cmdutil.ExitUsage, "pattern"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "0", "--devices", "x", "-D", "0", "--dry-run"}, cmdutil.ExitUsage, "-D 0"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "0", "--devices", "x", "-u", "32", "--dry-run"}, cmdutil.ExitUsage, "-u 32: QP timeout must be 0..31"},
		{[]string{"perf", "mesh", "write", "--launcher", "openmpi", "--dry-run"}, cmdutil.ExitUsage, "OMPI_COMM_WORLD_RANK"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "1", "--devices", "x", "--device-per-rank", "--dry-run"}, cmdutil.ExitUsage, ""},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "0", "--devices", "x", "--deadline", "-1s"}, cmdutil.ExitUsage, "--deadline -1s"},
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "0", "--devices", "x", "--expect", "speed=1"}, cmdutil.ExitUsage, `unknown key "speed"`},
		// A rank whose coordinator never answers: a peer unreachable.
		{[]string{"perf", "mesh", "write", "--hosts", hosts, "--rank", "1", "--devices", "x", "--coordinator", closedPort(t), "--join-timeout", "1s"},
			cmdutil.ExitPeer, "perf mesh: coordinator 127.0.0.1:"},
	} {
		_, stderr, code := cmdtest.Run(t, NewCmd, c.args...)
		if c.want == "" {
			if code != 0 {
				t.Errorf("%q: exit %d %s", c.args, code, stderr)
			}
			continue
		}
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d %q, want %d saying %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// closedPort is a local TCP address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
