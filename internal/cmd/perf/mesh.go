package perf

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/doctor"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/mesh"
	"github.com/rdmactl/rdmactl/internal/mesh/perfrun"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/render"
)

const meshExample = `  # every host pair of a Slurm job, 5 s each, every ACTIVE port
  srun -N 16 --ntasks-per-node=1 rdmactl perf mesh write -D 5
  # Open MPI: rank 0's host names the rendezvous
  mpirun -np 16 --hostfile hosts rdmactl perf mesh write --coordinator node01:18600
  # by hand (pdsh, clush, ssh): the same host file everywhere, each its rank
  rdmactl perf mesh write --hosts hosts.txt --rank 3
  # what it would do, without starting anything
  rdmactl perf mesh write --hosts hosts.txt --rank 0 --dry-run`

type meshFlags struct {
	lat         bool
	size        string
	duration    int
	qps         int
	qpTimeout   uint8
	userTimeout bool // -u given: QoS.UserTimeout
	launcher    string
	hostsFile   string
	rank        int
	coordinator string
	job         string
	k8sJob      string
	k8sService  string
	k8sCompl    int
	devices     string
	rails       bool
	perRank     bool
	pattern     string
	from        int
	seed        uint64
	both        bool
	portBase    int
	minShare    float64
	limitBW     float64
	limitLat    float64
	join        time.Duration
	dryRun      bool
	slowest     int
	html        string
	doctor      bool
	expect      string
	deadline    time.Duration
}

func newMeshCmd(a *cmdutil.App) *cobra.Command {
	fl := &meshFlags{}
	c := &cobra.Command{
		Use:   "mesh send|write|read [flags]",
		Short: "Qualify a cluster: every rank of a job tests its links with the others, launched by Slurm, MPI or Kubernetes",
		Long: `Every rank of a job runs the same command line; who it is and who the others
are comes from the launcher (srun, mpirun, a Kubernetes Indexed Job, or
--hosts FILE --rank N), detected in the order hostfile, slurm, openmpi,
kubernetes, or forced with --launcher. Rank 0 (or --coordinator HOST:PORT)
gathers every rank over TCP, hands out the schedule (--pattern), drives its
rounds (no endpoint in two tests at once) and prints every test's figure,
the slowest tests and the endpoints most often in bad ones. rdmactl starts
no process on other hosts: the job engine does.`,
		Example: meshExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			fl.userTimeout = c.Flags().Changed("qp-timeout")
			return runMesh(cmdutil.Watching(c), a, fl, args[0])
		},
	}
	f := c.Flags()
	f.BoolVar(&fl.lat, "lat", false, "measure latency instead of bandwidth")
	f.StringVarP(&fl.size, "size", "s", "", "message size (default 65536 for bw, 2 for --lat)")
	f.IntVarP(&fl.duration, "duration", "D", 5, "seconds per test")
	f.IntVarP(&fl.qps, "qp", "q", 1, "QPs per test")
	f.Uint8VarP(&fl.qpTimeout, "qp-timeout", "u", 14, "RC retransmit timeout of every test's QPs, 0..31: 4.096 usec * 2^N (0: none), as perf's -u")
	f.StringVar(&fl.launcher, "launcher", "", "force the launcher: slurm, openmpi, kubernetes or hostfile")
	f.StringVar(&fl.hostsFile, "hosts", "", "host `FILE`: one rank a line (or HOST slots=N), with --rank")
	f.IntVar(&fl.rank, "rank", -1, "this process's rank in --hosts")
	f.StringVar(&fl.coordinator, "coordinator", "", "rank 0's `HOST:PORT` (default: the launcher's first host, port 18600)")
	f.StringVar(&fl.job, "job", "", "the job's name: a rank of another job is refused (default: the launcher's job id)")
	f.StringVar(&fl.k8sJob, "k8s-job", "", "the Indexed Job's name")
	f.StringVar(&fl.k8sService, "k8s-service", "", "the headless Service of its pods")
	f.IntVar(&fl.k8sCompl, "k8s-completions", 0, "the Indexed Job's completions")
	f.StringVar(&fl.devices, "devices", "", "comma-separated devices to test (default: every device with an ACTIVE port 1)")
	f.BoolVar(&fl.rails, "rails", false, "pair device i only with device i on other hosts (rail-optimized fabrics)")
	f.BoolVar(&fl.perRank, "device-per-rank", false, "one device a rank: the host's device at the rank's local rank (one rank per NIC, as GPU jobs place them)")
	f.StringVar(&fl.pattern, "pattern", "all-pairs", "all-pairs, ring, one-to-all or pairs")
	f.IntVar(&fl.from, "from", 0, "one-to-all: the rank that tests every other")
	f.Uint64Var(&fl.seed, "seed", 1, "pairs: the random matching's seed")
	f.BoolVar(&fl.both, "both", false, "test each pair in both directions")
	f.IntVar(&fl.portBase, "port-base", 18700, "first TCP port of the tests' exchanges (16 a rank on its host)")
	f.Float64Var(&fl.minShare, "min-share", 0, "exit 7 for a test below this share of the median (0.9: 90%)")
	f.Float64VarP(&fl.limitBW, "limit_bw", "w", 0, "exit 7 for a test below this bandwidth (MiB/s)")
	f.Float64Var(&fl.limitLat, "limit_lat", 0, "exit 7 for a test above this latency (usec)")
	f.DurationVar(&fl.join, "join-timeout", 2*time.Minute, "how long rank 0 waits for every rank to come")
	f.DurationVar(&fl.deadline, "deadline", 0, "the job's deadline from its start (e.g. 30m): rank 0 starts no round after it and reports the tests left as not run (0: none)")
	f.BoolVar(&fl.dryRun, "dry-run", false, "print the rank, peers, devices and schedule derived, and start nothing")
	f.IntVar(&fl.slowest, "slowest", 10, "how many of the slowest tests to list")
	f.BoolVar(&fl.doctor, "doctor", false, "first run doctor's checks on this rank's devices (port state, RoCE netdev and GID, uverbs access, memlock, modules): a rank whose host FAILs one is left out of the job, with the reason in the report, and exits 8")
	f.StringVar(&fl.expect, "expect", "", "with --doctor (implied): also require `KEY=VALUE,...` as 'doctor --expect' (ports, rate, mtu)")
	f.StringVar(&fl.html, "html", "", "rank 0 also writes the report to `FILE` as a self-contained HTML page (the matrix as a heat map)")
	return c
}

func runMesh(ctx context.Context, a *cmdutil.App, fl *meshFlags, verbName string) error {
	var verb perf.Verb
	switch verbName {
	case "send":
		verb = perf.VerbSend
	case "write":
		verb = perf.VerbWrite
	case "read":
		verb = perf.VerbRead
	default:
		return cmdutil.UsageErrorf("perf mesh %q: want send, write or read", verbName)
	}
	if fl.duration < 1 || fl.duration > 3600 {
		return cmdutil.UsageErrorf("-D %d: want 1 to 3600 seconds", fl.duration)
	}
	if fl.qpTimeout > 31 {
		return cmdutil.UsageErrorf("-u %d: QP timeout must be 0..31 (4.096 us * 2^N; 0: no retransmit timer)", fl.qpTimeout)
	}
	if fl.deadline < 0 {
		return cmdutil.UsageErrorf("--deadline %v: want a positive duration, or 0 for none", fl.deadline)
	}
	var expect *doctor.Expect
	if fl.expect != "" {
		x, err := doctor.ParseExpect(fl.expect)
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, err)
		}
		expect = &x
	}
	in := mesh.Inputs{Env: os.LookupEnv, Force: mesh.Launcher(fl.launcher), Rank: fl.rank,
		K8sJob: fl.k8sJob, K8sService: fl.k8sService, K8sCompletions: fl.k8sCompl}
	if fl.hostsFile != "" {
		b, err := os.ReadFile(fl.hostsFile)
		if err != nil {
			return cmdutil.UsageErrorf("--hosts: %v", err)
		}
		in.HostsFile = b
	}
	id, err := mesh.Detect(in)
	if err != nil {
		return cmdutil.UsageErrorf("perf mesh: %v", err)
	}
	coord := fl.coordinator
	if coord == "" {
		if id.Coordinator == "" {
			return cmdutil.UsageErrorf("perf mesh: %s does not say where rank 0 runs: give --coordinator HOST:PORT", id.Launcher)
		}
		coord = net.JoinHostPort(id.Coordinator, "18600")
	}
	if _, _, err := net.SplitHostPort(coord); err != nil {
		return cmdutil.UsageErrorf("--coordinator %q: want HOST:PORT", coord)
	}
	devices, err := meshDevices(a, fl.devices)
	if err != nil {
		return err
	}
	if fl.perRank {
		if id.LocalRank >= len(devices) {
			return cmdutil.UsageErrorf("--device-per-rank: local rank %d, but this host has %d devices (%s)", id.LocalRank, len(devices), strings.Join(devices, ","))
		}
		devices = devices[id.LocalRank : id.LocalRank+1]
	}
	job := fl.job
	if job == "" {
		for _, k := range []string{"SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"} {
			if v, ok := os.LookupEnv(k); ok {
				job = v
				if s, ok := os.LookupEnv("SLURM_STEP_ID"); ok && k == "SLURM_JOB_ID" {
					job += "." + s
				}
				break
			}
		}
	}
	p := perf.Params{Verb: verb, Test: perf.TestBW, QPs: fl.qps, IBPort: 1, Iters: 0,
		Duration: time.Duration(fl.duration) * time.Second}
	p.QoS.Timeout, p.QoS.UserTimeout = fl.qpTimeout, fl.userTimeout
	if fl.lat {
		p.Test = perf.TestLat
	}
	if fl.size != "" {
		if p.Size, err = perf.ParseSize(fl.size); err != nil {
			return cmdutil.UsageErrorf("-s: %v", err)
		}
	}
	me := mesh.Hello{Job: job, Rank: id.Rank, Size: id.Size, Devices: devices,
		Port: perfrun.PortBase(fl.portBase, id.LocalRank)}
	if h, err := os.Hostname(); err == nil {
		me.Host = h
	}
	if id.Rank == 0 {
		// The others reach rank 0's tests where they reach its
		// rendezvous; theirs are where the coordinator saw them come from.
		me.Addr, _, _ = net.SplitHostPort(coord)
	}
	if fl.dryRun {
		return printMeshPlan(a, id, coord, me, fl)
	}
	if len(devices) == 0 {
		return cmdutil.Unsupportedf("perf mesh: no device with an ACTIVE port 1 here; give --devices")
	}
	if fl.doctor || expect != nil {
		if me.Unfit, err = meshDoctor(a, devices, expect, p); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(fl.join)
	tm := mesh.Timing{Prepare: 30 * time.Second, Run: p.Duration + 60*time.Second}
	if fl.deadline > 0 {
		tm.Deadline = time.Now().Add(fl.deadline)
	}
	if id.Rank != 0 {
		// A coordinator that cannot be reached, refuses this rank or
		// goes away is a benchmark peer's failure: exit 6.
		roster, link, err := mesh.Join(ctx, coord, me, deadline)
		if err != nil {
			return meshPeerError(ctx, err)
		}
		defer link.Close()
		if me.Unfit != "" {
			return cmdutil.WithCode(cmdutil.ExitDoctorFail, fmt.Errorf("perf mesh: rank %d left out of the job: %s", id.Rank, me.Unfit))
		}
		plan, err := meshPlan(roster, fl)
		if err != nil {
			return err
		}
		run := &perfrun.Runner{Rank: id.Rank, Roster: roster, Devices: devices, Params: p}
		return meshPeerError(ctx, mesh.Follow(ctx, id.Rank, plan, roster, link, run, tm))
	}
	_, port, _ := net.SplitHostPort(coord)
	ln, err := net.Listen("tcp", ":"+port)
	if err != nil {
		return fmt.Errorf("perf mesh: rank 0 cannot listen for the rendezvous: %w", err)
	}
	defer ln.Close()
	roster, links, err := mesh.Gather(ctx, ln, me, deadline)
	if err != nil {
		return err
	}
	plan, err := meshPlan(roster, fl)
	if err != nil {
		return err
	}
	run := &perfrun.Runner{Rank: 0, Roster: roster, Devices: devices, Params: p}
	outcomes := mesh.Drive(ctx, plan, roster, links, run, tm)
	for _, l := range links {
		if l != nil {
			l.Close()
		}
	}
	names := func(e mesh.Endpoint) mesh.EndpointName {
		m := roster.Members[e.Rank]
		n := mesh.EndpointName{Rank: e.Rank, Host: m.Host}
		if e.Dev < len(m.Devices) {
			n.Device = m.Devices[e.Dev]
		}
		return n
	}
	rep := mesh.NewReport(outcomes, fl.lat, names, mesh.Limits{MinBW: fl.limitBW, MaxLat: fl.limitLat, MinShare: fl.minShare}, roster, fl.slowest)
	if err := printMeshReport(a, rep); err != nil {
		return err
	}
	if fl.html != "" {
		title := fmt.Sprintf("rdmactl perf mesh %s: %d ranks", verbName, len(roster.Members))
		if job != "" {
			title += ", job " + job
		}
		if err := writeMeshHTML(fl.html, rep, title); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", ctx.Err())
	}
	if len(rep.Missed) > 0 {
		return cmdutil.WithCode(cmdutil.ExitPerfThreshold, fmt.Errorf("perf mesh: %d of %d tests failed or missed a threshold (see the report)", len(rep.Missed), len(rep.Tests)))
	}
	return nil
}

// meshDevices is --devices, or every device whose port 1 is ACTIVE.
func meshDevices(a *cmdutil.App, list string) ([]string, error) {
	if list != "" {
		return strings.Split(list, ","), nil
	}
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	ports, err := src.Ports("", 0, inventory.PortOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ports {
		if p.Port == 1 && p.State == "ACTIVE" {
			out = append(out, p.Dev)
		}
	}
	return out, nil
}

// meshPlan is the plan of the ranks that came, from the flags (every rank
// has the same ones: the job engine started the same command line).
func meshPlan(r *mesh.Roster, fl *meshFlags) (*mesh.Plan, error) {
	devs := make([]int, len(r.Members))
	for i, m := range r.Members {
		devs[i] = len(m.Devices)
	}
	return planOf(devs, fl)
}

// planOf is the flags' plan over ranks with devs[r] devices each (at
// least one: a rank without any still has its place in the rounds).
func planOf(devs []int, fl *meshFlags) (*mesh.Plan, error) {
	for i := range devs {
		devs[i] = max(devs[i], 1)
	}
	p, err := mesh.NewPlan(mesh.Plan{Pattern: mesh.Pattern(fl.pattern), Ranks: len(devs), Devs: devs,
		Rails: fl.rails, Both: fl.both, From: fl.from, Seed: fl.seed})
	if err != nil {
		return nil, cmdutil.UsageErrorf("perf mesh: %v", err)
	}
	return p, nil
}

func printMeshPlan(a *cmdutil.App, id *mesh.Identity, coord string, me mesh.Hello, fl *meshFlags) error {
	devs := make([]int, id.Size)
	for i := range devs {
		devs[i] = len(me.Devices) // others' devices are known only at the rendezvous
	}
	plan, err := planOf(devs, fl)
	if err != nil {
		return err
	}
	type planJSON struct {
		Launcher    string        `json:"launcher"`
		Rank        int           `json:"rank"`
		Size        int           `json:"size"`
		LocalRank   int           `json:"local_rank"`
		Hosts       []string      `json:"hosts"`
		Coordinator string        `json:"coordinator"`
		Job         string        `json:"job"`
		Devices     []string      `json:"devices"`
		Port        int           `json:"port"`
		Rounds      int           `json:"rounds"`
		Mine        [][]mesh.Test `json:"my_tests"`
	}
	out := planJSON{Launcher: string(id.Launcher), Rank: id.Rank, Size: id.Size, LocalRank: id.LocalRank, Hosts: id.Hosts,
		Coordinator: coord, Job: me.Job, Devices: me.Devices, Port: me.Port, Rounds: plan.Rounds()}
	for k := range plan.Rounds() {
		var mine []mesh.Test
		for _, t := range plan.Round(k, nil) {
			if t.Src.Rank == id.Rank || t.Dst.Rank == id.Rank {
				mine = append(mine, t)
			}
		}
		out.Mine = append(out.Mine, mine)
	}
	if a.Opts.JSON {
		return a.PrintJSON(out)
	}
	fmt.Fprintf(a.Stdout, "launcher:    %s\nrank:        %d of %d (local rank %d)\ncoordinator: %s\njob:         %q\ndevices:     %s\nports:       %d-%d\nrounds:      %d (%s%s)\n",
		out.Launcher, out.Rank, out.Size, out.LocalRank, out.Coordinator, out.Job, strings.Join(out.Devices, ","),
		out.Port, out.Port+perfrun.PortsPerRank-1, out.Rounds, fl.pattern, map[bool]string{true: ", rails", false: ""}[fl.rails])
	if out.Hosts != nil {
		fmt.Fprintf(a.Stdout, "hosts:       %s\n", strings.Join(out.Hosts, " "))
	}
	tw := render.NewTable(a.Stdout, "ROUND", "MY TESTS")
	for k, ts := range out.Mine {
		var s []string
		for _, t := range ts {
			s = append(s, fmt.Sprintf("%d:%d->%d:%d", t.Src.Rank, t.Src.Dev, t.Dst.Rank, t.Dst.Dev))
		}
		if len(s) == 0 {
			s = []string{"-"}
		}
		tw.Row(strconv.Itoa(k), strings.Join(s, " "))
	}
	return tw.Flush()
}

func printMeshReport(a *cmdutil.App, r *mesh.Report) error {
	if a.Opts.JSON {
		return a.PrintJSON(r)
	}
	// Colors only on a terminal, and not when NO_COLOR is set
	// (https://no-color.org).
	_, noColor := os.LookupEnv("NO_COLOR")
	return render.MeshReport(a.Stdout, r, cmdutil.IsTerminal(a.Stdout) && !noColor)
}

// writeMeshHTML writes the report's page to path through a temporary file
// in its directory, renamed over it: a reader never sees half a page.
func writeMeshHTML(path string, r *mesh.Report, title string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".rdmactl-mesh-*.html")
	if err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	defer os.Remove(f.Name()) // after a successful rename, there is nothing to remove
	if err := render.MeshHTML(f, r, title); err != nil {
		f.Close()
		return fmt.Errorf("--html: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("--html: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	return nil
}

// meshChecks are doctor's checks a rank runs with --doctor: those whose
// FAIL means its tests cannot run or would measure a broken setup.
var meshChecks = []string{"port_state", "roce_netdev", "roce_gid", "uverbs_access", "memlock", "kernel_modules"}

// meshDoctor runs meshChecks (and --expect's) on this host and returns
// why the rank is unfit: its first FAIL on the host or on one of its
// devices, and how many more; "" when it is fit.
func meshDoctor(a *cmdutil.App, devices []string, expect *doctor.Expect, p perf.Params) (string, error) {
	checks, err := doctor.Select(meshChecks)
	if err != nil {
		return "", err
	}
	if expect != nil {
		checks = append(checks, expect.Checks()...)
	}
	src, closeSrc, err := a.OpenInventory(true)
	if err != nil {
		return "", err
	}
	defer closeSrc()
	env := &doctor.Env{Src: src}
	env.PerfPins.Run = perf.PinnedBytes(p)
	env.PerfPins.All = env.PerfPins.Run
	var fails []string
	for _, r := range doctor.Run(env, checks) {
		if r.Status != doctor.Fail || r.Device != "" && !slices.Contains(devices, r.Device) {
			continue
		}
		what := r.Check
		if r.Device != "" {
			what += " " + r.Device
			if r.Port != 0 {
				what += "/" + strconv.Itoa(int(r.Port))
			}
		}
		fails = append(fails, what+": "+r.Evidence)
	}
	switch len(fails) {
	case 0:
		return "", nil
	case 1:
		return "doctor: " + fails[0], nil
	}
	return fmt.Sprintf("doctor: %s (and %d more)", fails[0], len(fails)-1), nil
}

// meshPeerError is err as exit 6 (a peer unreachable or gone), unless the
// job was interrupted (exit 130 as perf's).
func meshPeerError(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	return &perf.PeerError{Err: fmt.Errorf("perf mesh: %w", err)}
}
