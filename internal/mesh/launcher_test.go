package mesh

import (
	"strings"
	"testing"
)

// TestExpandHostlist: Slurm's host list syntax, expanded as `scontrol
// show hostnames` prints it (slurm src/common/hostlist.c).
func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string]string{
		"node1":                     "node1",
		"gpu[001-004,010],login1":   "gpu001 gpu002 gpu003 gpu004 gpu010 login1",
		"n[1-3]":                    "n1 n2 n3",
		"n[8-11]":                   "n8 n9 n10 n11",
		"n[08-11]":                  "n08 n09 n10 n11",
		"n[5]":                      "n5",
		"rack[1-2]-n[01-02]":        "rack1-n01 rack1-n02 rack2-n01 rack2-n02",
		"a[1-2]b[3,5]":              "a1b3 a1b5 a2b3 a2b5",
		"[1-2]":                     "1 2",
		"a,,b":                      "a b",
		" a\tb c,":                  "a b c",
		"n[99999999999]":            "n99999999999",
		"n[1-02]":                   "n1 n2",
		"n[01-2]":                   "n01 n02",
		"n[18446744073709551615]":   "n18446744073709551615",
		"n1,n1":                     "n1 n1",
		"x[0-1],y[2],z":             "x0 x1 y2 z",
		"node-a.example.com,node-b": "node-a.example.com node-b",
	} {
		got, err := ExpandHostlist(in)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "n[", "n]", "n[1-", "n[3-1]", "n[a-b]", "n[1-2", "n[[1]]", "n[18446744073709551616]", "n[0-65536]", "n[0-2000000]", "n[]", " , ", "n[1-2]-ib", "a[1-2]b[3]c", "[1-2]x", "n[ 1-2]"} {
		if got, err := ExpandHostlist(bad); err == nil {
			t.Errorf("%q: accepted as %q", bad, got)
		}
	}
}

// FuzzExpandHostlist: any input is a list of names without brackets or
// commas, at most MaxHosts of them, or an error; never a panic.
func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"gpu[001-004,010],login1", "a[1-2]b[3-4]", "n[08-11]", "x,y", "[1]", "n[1-3,5-7]z[0-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hosts, err := ExpandHostlist(s)
		if err != nil {
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHosts {
			t.Fatalf("%q: %d hosts", s, len(hosts))
		}
		for _, h := range hosts {
			if h == "" || strings.ContainsAny(h, "[], \t\n") {
				t.Fatalf("%q: host %q", s, h)
			}
		}
	})
}

func TestExpandTasksPerNode(t *testing.T) {
	got, err := ExpandTasksPerNode("2(x3),1")
	if err != nil || len(got) != 4 || got[0] != 2 || got[2] != 2 || got[3] != 1 {
		t.Errorf("2(x3),1: %v %v", got, err)
	}
	for _, bad := range []string{"", "x", "2(x0)", "2(x", "-1"} {
		if _, err := ExpandTasksPerNode(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestDetect: each launcher's variables give the rank, the size, the
// local rank, the hosts where known and rank 0's host.
func TestDetect(t *testing.T) {
	for _, c := range []struct {
		name string
		in   Inputs
		want Identity
	}{
		{"srun -n 4 over 2 nodes", Inputs{Env: envOf(map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4", "SLURM_LOCALID": "1",
			"SLURM_STEP_NODELIST": "gpu[01-02]", "SLURM_STEP_TASKS_PER_NODE": "2(x2)"}), Rank: -1},
			Identity{Launcher: Slurm, Rank: 3, Size: 4, LocalRank: 1, Hosts: []string{"gpu01", "gpu01", "gpu02", "gpu02"}, Coordinator: "gpu01"}},
		{"srun -m cyclic", Inputs{Env: envOf(map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2",
			"SLURM_STEP_NODELIST": "a,b", "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_DISTRIBUTION": "cyclic"}), Rank: -1},
			Identity{Launcher: Slurm, Rank: 0, Size: 2, Coordinator: "a"}},
		{"mpirun in a Slurm allocation", Inputs{Env: envOf(map[string]string{"SLURM_JOB_NODELIST": "a,b", "OMPI_COMM_WORLD_RANK": "1",
			"OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}), Rank: -1},
			Identity{Launcher: OpenMPI, Rank: 1, Size: 8, LocalRank: 1}},
		{"PMIx", Inputs{Env: envOf(map[string]string{"PMIX_RANK": "2", "PMIX_SIZE": "3"}), Rank: -1},
			Identity{Launcher: OpenMPI, Rank: 2, Size: 3}},
		{"Indexed Job", Inputs{Env: envOf(map[string]string{"JOB_COMPLETION_INDEX": "1"}), Rank: -1,
			K8sJob: "mesh", K8sService: "mesh-svc", K8sCompletions: 3},
			Identity{Launcher: Kubernetes, Rank: 1, Size: 3, Hosts: []string{"mesh-0.mesh-svc", "mesh-1.mesh-svc", "mesh-2.mesh-svc"}, Coordinator: "mesh-0.mesh-svc"}},
		{"host file", Inputs{Env: envOf(map[string]string{"SLURM_PROCID": "7"}), HostsFile: []byte("# rack 1\nh1 slots=2\nh2\n"), Rank: 1},
			Identity{Launcher: HostFile, Rank: 1, Size: 3, LocalRank: 1, Hosts: []string{"h1", "h1", "h2"}, Coordinator: "h1"}},
	} {
		id, err := Detect(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if id.Launcher != c.want.Launcher || id.Rank != c.want.Rank || id.Size != c.want.Size || id.LocalRank != c.want.LocalRank ||
			strings.Join(id.Hosts, " ") != strings.Join(c.want.Hosts, " ") || id.Coordinator != c.want.Coordinator {
			t.Errorf("%s: %+v, want %+v", c.name, *id, c.want)
		}
	}
	for _, c := range []struct {
		name string
		in   Inputs
		want string
	}{
		{"nothing", Inputs{Env: envOf(nil), Rank: -1}, "no launcher found"},
		{"forced slurm", Inputs{Env: envOf(nil), Force: Slurm, Rank: -1}, "SLURM_PROCID is not set"},
		{"unknown launcher", Inputs{Env: envOf(nil), Force: "lsf", Rank: -1}, "unknown launcher"},
		{"rank past size", Inputs{Env: envOf(map[string]string{"OMPI_COMM_WORLD_RANK": "4", "OMPI_COMM_WORLD_SIZE": "4"}), Rank: -1}, "rank 4 of 4"},
		{"bad number", Inputs{Env: envOf(map[string]string{"SLURM_PROCID": "x"}), Rank: -1}, "SLURM_PROCID"},
		{"srun without a node list", Inputs{Env: envOf(map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}), Rank: -1}, "SLURM_STEP_NODELIST"},
		{"Indexed Job without names", Inputs{Env: envOf(map[string]string{"JOB_COMPLETION_INDEX": "0"}), Rank: -1}, "--k8s-job"},
		{"rank without hosts", Inputs{Env: envOf(nil), Rank: 2}, "--rank needs --hosts"},
		{"rank past the host file", Inputs{Env: envOf(nil), HostsFile: []byte("a\nb\n"), Rank: 2}, "--rank 0 to 1"},
		{"bad host file", Inputs{Env: envOf(nil), HostsFile: []byte("a slots=x\n"), Rank: 0}, "line 1"},
		{"empty host file", Inputs{Env: envOf(nil), HostsFile: []byte("# none\n"), Rank: 0}, "no hosts"},
	} {
		if _, err := Detect(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
