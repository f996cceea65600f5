package doctor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/doctor"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/spf13/cobra"
)

// errDoctorFail is returned after the report is printed; main prints its
// one line on stderr and exits 8.
var errDoctorFail = errors.New("doctor: at least one check FAILed")

// doctorJSON is doctor's -j output.
type doctorJSON struct {
	Results []doctor.Result `json:"results"`
	Summary doctorSummary   `json:"summary"`
	Offline bool            `json:"offline"`
}

type doctorSummary struct {
	Pass int `json:"pass"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var watch time.Duration
	var only []string
	var expect string
	var ids strings.Builder
	for _, c := range doctor.Checks {
		live := ""
		if c.NeedsLive {
			live = " (live only)"
		}
		fmt.Fprintf(&ids, "  %-22s %s%s\n", c.ID, c.Doc, live)
	}
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check whether this host is fit to run RDMA jobs: PASS/WARN/FAIL per check, exit 8 on a FAIL",
		Long: `Check this host's RDMA setup. Each check prints PASS, WARN, FAIL or SKIP for
each device, port or host fact it judged, one line of evidence and, on WARN
and FAIL, one line of what to do. Exit code 8 when any check FAILs (0
otherwise, WARNs included).

With --sysfs-root (a capture from 'rdmactl capture'), the checks that need
the live system are SKIPped; the others give the verdicts they gave on the
captured host.

With --expect, also what the site requires of the host before it takes jobs
(what GPU node health checks such as gpud and NHC verify): ports=N at least
N ports ACTIVE, rate=GBPS each ACTIVE port at least GBPS Gb/s, mtu=BYTES each
ACTIVE port's active MTU at least BYTES (checks expect_ports, expect_rate,
expect_mtu).

Checks:
` + ids.String(),
		Example: `  rdmactl doctor
  rdmactl -j doctor --watch 30s
  rdmactl doctor --check port_state,roce_gid
  rdmactl doctor --expect ports=8,rate=400,mtu=4096
  rdmactl --sysfs-root host1.tar.gz doctor`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if watch < 0 {
				return cmdutil.UsageErrorf("--watch %v: the duration must not be negative", watch)
			}
			checks, err := doctor.Select(only)
			if err != nil {
				return cmdutil.WithCode(cmdutil.ExitUsage, err)
			}
			if c.Flags().Changed("expect") {
				x, err := doctor.ParseExpect(expect)
				if err != nil {
					return cmdutil.WithCode(cmdutil.ExitUsage, err)
				}
				checks = append(slices.Clip(checks), x.Checks()...)
			}
			src, closeSrc, err := a.OpenInventory(true)
			if err != nil {
				return err
			}
			defer closeSrc()
			env := &doctor.Env{Src: src, Watch: watch}
			env.PerfPins.Run, env.PerfPins.All = perfWritePins()
			// A source that cannot list devices at all is an error of its
			// own (no RDMA, unreadable capture), not a verdict.
			if _, err := env.Devices(); err != nil {
				return err
			}
			rs := doctor.Run(env, checks)
			if err := printDoctor(a, rs, src.Offline()); err != nil {
				return err
			}
			if doctor.Worst(rs) == doctor.Fail {
				return cmdutil.WithCode(cmdutil.ExitDoctorFail, errDoctorFail)
			}
			return nil
		},
	}
	c.Flags().DurationVar(&watch, "watch", 0, "also watch the error counters for `DURATION` (e.g. 30s) and FAIL those that grow")
	c.Flags().StringSliceVar(&only, "check", nil, "run only these checks (comma-separated `IDS`)")
	c.Flags().StringVar(&expect, "expect", "", "also require `KEY=VALUE,...`: ports=N ACTIVE, rate=GBPS per port, mtu=BYTES per port")
	return c
}

func printDoctor(a *cmdutil.App, rs []doctor.Result, offline bool) error {
	if a.Opts.JSON {
		out := doctorJSON{Results: rs, Offline: offline}
		if out.Results == nil {
			out.Results = []doctor.Result{}
		}
		for _, r := range rs {
			switch r.Status {
			case doctor.Pass:
				out.Summary.Pass++
			case doctor.Warn:
				out.Summary.Warn++
			case doctor.Fail:
				out.Summary.Fail++
			case doctor.Skip:
				out.Summary.Skip++
			}
		}
		return a.PrintJSON(out)
	}
	t := render.NewTable(a.Stdout, "STATUS", "CHECK", "TARGET", "EVIDENCE")
	for _, r := range rs {
		target := r.Device
		if r.Port != 0 {
			target = fmt.Sprintf("%s/%d", r.Device, r.Port)
		}
		t.Row(string(r.Status), r.Check, target, r.Evidence)
		if r.Fix != "" {
			t.Row(" ", " ", " ", "fix: "+r.Fix) // " ": blank, not the table's "-"
		}
	}
	return t.Flush()
}

// perfWritePins is what 'rdmactl perf write' pins with its defaults, and
// with -a (every size up to 8 MiB): doctor's memlock check compares
// RLIMIT_MEMLOCK with them, so that its verdict and a failing run's
// MemlockError agree.
func perfWritePins() (run, all uint64) {
	return perf.PinnedBytes(perf.Params{Test: perf.TestBW, Verb: perf.VerbWrite}),
		perf.PinnedBytes(perf.Params{Test: perf.TestBW, Verb: perf.VerbWrite, AllSizes: true})
}
