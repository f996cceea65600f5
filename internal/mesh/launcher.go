package mesh

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Launcher names a way the job's processes were started.
type Launcher string

const (
	Slurm      Launcher = "slurm"      // srun
	OpenMPI    Launcher = "openmpi"    // mpirun (Open MPI, or PMIx's variables)
	Kubernetes Launcher = "kubernetes" // an Indexed Job
	HostFile   Launcher = "hostfile"   // --hosts FILE --rank N (pdsh, clush, ssh)
)

// Launchers is the order Detect tries them in: an explicit host file
// first (the user said so), then the launchers whose variables only they
// set. Slurm comes before Open MPI because mpirun inside an allocation
// sees Slurm's job variables too; its rank is in SLURM_PROCID only under
// srun, which Detect checks.
var Launchers = []Launcher{HostFile, Slurm, OpenMPI, Kubernetes}

// Identity is who this process is in the job.
type Identity struct {
	Launcher  Launcher
	Rank      int // 0..Size-1
	Size      int
	LocalRank int // among the ranks on this host (0 when unknown)
	// Hosts is every rank's host, by rank, where the launcher says
	// (Slurm's node list and tasks per node, a host file, the Indexed
	// Job's names); nil where it does not (Open MPI).
	Hosts []string
	// Coordinator is rank 0's host, where the launcher says ("" when it
	// does not: --coordinator is needed).
	Coordinator string
}

// Inputs are what Detect reads besides the environment: the flags.
type Inputs struct {
	Env       func(string) (string, bool)
	Force     Launcher // --launcher ("": detect)
	HostsFile []byte   // --hosts FILE's content (nil: not given)
	Rank      int      // --rank (with --hosts), -1 when not given
	// Kubernetes: the Indexed Job's completions and its pods' host names
	// (<job>-<index>.<service>): --k8s-job, --k8s-service.
	K8sJob, K8sService string
	K8sCompletions     int
}

// Detect finds this process's identity: from the launcher forced, or
// from the first of Launchers whose variables are set.
func Detect(in Inputs) (*Identity, error) {
	try := Launchers
	if in.Force != "" {
		try = []Launcher{in.Force}
	}
	for _, l := range try {
		id, present, err := detectOne(l, in)
		if err != nil {
			return nil, err
		}
		if present {
			return id, nil
		}
		if in.Force != "" {
			return nil, fmt.Errorf("--launcher=%s: %s", l, missing(l))
		}
	}
	return nil, fmt.Errorf("no launcher found: run under srun, mpirun or an Indexed Job, or give --hosts FILE and --rank N")
}

func missing(l Launcher) string {
	switch l {
	case Slurm:
		return "SLURM_PROCID is not set (run under srun)"
	case OpenMPI:
		return "OMPI_COMM_WORLD_RANK and PMIX_RANK are not set (run under mpirun)"
	case Kubernetes:
		return "JOB_COMPLETION_INDEX is not set (run in an Indexed Job's pod)"
	case HostFile:
		return "give --hosts FILE and --rank N"
	}
	return fmt.Sprintf("unknown launcher %q (slurm, openmpi, kubernetes, hostfile)", string(l))
}

// detectOne: present is whether l's variables (or flags) are there.
func detectOne(l Launcher, in Inputs) (id *Identity, present bool, err error) {
	env := func(k string) string { v, _ := in.Env(k); return v }
	has := func(k string) bool { _, ok := in.Env(k); return ok }
	num := func(k string) (int, error) {
		v, err := strconv.Atoi(strings.TrimSpace(env(k)))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s=%q: want a number", k, env(k))
		}
		return v, nil
	}
	switch l {
	case HostFile:
		if in.HostsFile == nil {
			if in.Rank >= 0 {
				return nil, false, fmt.Errorf("--rank needs --hosts FILE")
			}
			return nil, false, nil
		}
		hosts, err := ParseHostsFile(in.HostsFile)
		if err != nil {
			return nil, false, fmt.Errorf("--hosts: %w", err)
		}
		if in.Rank < 0 || in.Rank >= len(hosts) {
			return nil, false, fmt.Errorf("--hosts lists %d ranks: give --rank 0 to %d", len(hosts), len(hosts)-1)
		}
		return identity(HostFile, in.Rank, len(hosts), localRank(hosts, in.Rank), hosts)
	case Slurm:
		if !has("SLURM_PROCID") {
			return nil, false, nil
		}
		id := &Identity{Launcher: Slurm}
		if id.Rank, err = num("SLURM_PROCID"); err != nil {
			return nil, false, err
		}
		if id.Size, err = num("SLURM_NTASKS"); err != nil {
			return nil, false, err
		}
		if has("SLURM_LOCALID") {
			if id.LocalRank, err = num("SLURM_LOCALID"); err != nil {
				return nil, false, err
			}
		}
		list := env("SLURM_STEP_NODELIST")
		if list == "" {
			list = env("SLURM_JOB_NODELIST")
		}
		if list == "" {
			return nil, false, fmt.Errorf("SLURM_PROCID is set but SLURM_STEP_NODELIST is not: run under srun")
		}
		nodes, err := ExpandHostlist(list)
		if err != nil {
			return nil, false, err
		}
		// Rank 0 is on the first node, whatever the distribution.
		id.Coordinator = nodes[0]
		// Ranks to hosts as srun's default block distribution places them;
		// under another (-m cyclic) the hosts come from the rendezvous.
		dist := env("SLURM_DISTRIBUTION")
		tpn, err := ExpandTasksPerNode(env("SLURM_STEP_TASKS_PER_NODE"))
		if err == nil && len(tpn) == len(nodes) && (dist == "" || strings.HasPrefix(dist, "block")) {
			id.Hosts = blockHosts(nodes, tpn, id.Size)
		}
		return checked(id)
	case OpenMPI:
		rankVar, sizeVar, localVar := "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"
		if !has(rankVar) {
			if !has("PMIX_RANK") {
				return nil, false, nil
			}
			rankVar, sizeVar, localVar = "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK"
		}
		id := &Identity{Launcher: OpenMPI}
		if id.Rank, err = num(rankVar); err != nil {
			return nil, false, err
		}
		if id.Size, err = num(sizeVar); err != nil {
			return nil, false, err
		}
		if has(localVar) {
			if id.LocalRank, err = num(localVar); err != nil {
				return nil, false, err
			}
		}
		return checked(id)
	case Kubernetes:
		if !has("JOB_COMPLETION_INDEX") {
			return nil, false, nil
		}
		id := &Identity{Launcher: Kubernetes, Size: in.K8sCompletions}
		if id.Rank, err = num("JOB_COMPLETION_INDEX"); err != nil {
			return nil, false, err
		}
		if in.K8sJob == "" || in.K8sService == "" || in.K8sCompletions < 1 {
			return nil, false, fmt.Errorf("in an Indexed Job: give --k8s-job NAME, --k8s-service NAME and --k8s-completions N (the pods are NAME-INDEX.SERVICE)")
		}
		for i := range in.K8sCompletions {
			id.Hosts = append(id.Hosts, fmt.Sprintf("%s-%d.%s", in.K8sJob, i, in.K8sService))
		}
		id.Coordinator = id.Hosts[0]
		return checked(id)
	}
	return nil, false, fmt.Errorf("--launcher=%s: %s", l, missing(l))
}

func identity(l Launcher, rank, size, local int, hosts []string) (*Identity, bool, error) {
	return checked(&Identity{Launcher: l, Rank: rank, Size: size, LocalRank: local, Hosts: hosts, Coordinator: hosts[0]})
}

func checked(id *Identity) (*Identity, bool, error) {
	switch {
	case id.Size < 1 || id.Size > MaxHosts:
		return nil, false, fmt.Errorf("%s: %d ranks: want 1 to %d", id.Launcher, id.Size, MaxHosts)
	case id.Rank >= id.Size:
		return nil, false, fmt.Errorf("%s: rank %d of %d ranks", id.Launcher, id.Rank, id.Size)
	case id.Hosts != nil && len(id.Hosts) != id.Size:
		return nil, false, fmt.Errorf("%s: %d ranks but %d hosts", id.Launcher, id.Size, len(id.Hosts))
	}
	return id, true, nil
}

// blockHosts places size ranks on nodes, tpn[i] on node i in order.
func blockHosts(nodes []string, tpn []int, size int) []string {
	var out []string
	for i, n := range nodes {
		for range tpn[i] {
			out = append(out, n)
		}
	}
	if len(out) != size {
		return nil
	}
	return out
}

// localRank is rank's index among the ranks on its host.
func localRank(hosts []string, rank int) int {
	n := 0
	for _, h := range hosts[:rank] {
		if h == hosts[rank] {
			n++
		}
	}
	return n
}

// ParseHostsFile reads a host file: one rank a line (a host repeated for
// several ranks on it), or "host slots=N" as Open MPI's host files give N
// ranks to a host; blank lines and '#' comments are skipped.
func ParseHostsFile(b []byte) ([]string, error) {
	var hosts []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		s := sc.Text()
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			continue
		}
		slots := 1
		for _, opt := range f[1:] {
			v, ok := strings.CutPrefix(opt, "slots=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 || n > MaxHosts {
				return nil, fmt.Errorf("line %d: %q: want HOST or HOST slots=N", line, strings.TrimSpace(s))
			}
			slots = n
		}
		if len(hosts)+slots > MaxHosts {
			return nil, fmt.Errorf("more than %d ranks", MaxHosts)
		}
		for range slots {
			hosts = append(hosts, f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("no hosts in it")
	}
	return hosts, nil
}
