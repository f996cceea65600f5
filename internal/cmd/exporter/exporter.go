package exporter

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/exporter/web"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

// defaultListen is the exporter's port, 9879: not in the copy of
// Prometheus's default port allocations page that could be read when it
// was chosen (docs/exporter.md says how far that check goes).
const defaultListen = ":9879"

type exporterFlags struct {
	listen     string
	path       string
	webConfig  string
	tlsCert    string
	tlsKey     string
	authUsers  string
	once       bool
	timeout    time.Duration
	qp         bool
	qpLimit    int
	goMetrics  bool
	procMetric bool
	gidEvery   time.Duration
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var fl exporterFlags
	c := &cobra.Command{
		Use:   "exporter",
		Short: "Prometheus exporter: devices, ports, GID tables and every counter, per scrape",
		Long: `Serve RDMA metrics for Prometheus on --web.listen-address at
--web.telemetry-path: device and port facts, GID table sizes and every counter
'rdmactl counters' shows (sysfs counters/ in base units, hw_counters/,
device-level hw_counters, NLDEV statistics). docs/exporter.md lists the
metrics and their node_exporter infiniband equivalents.

Each scrape takes one inventory snapshot and waits for it at most --timeout;
a snapshot still running then is not started again: the scrape gets the last
complete one with rdma_exporter_snapshot_stale 1.

--once writes one exposition to stdout and exits (node_exporter's textfile
collector). --web.config.file is exporter-toolkit's web config, as every
Prometheus exporter takes it: TLS (with client certificates), basic auth,
headers and a rate limit, read again at every connection so that
certificates rotate without a restart. --web.tls-cert-file with
--web.tls-key-file, and --web.basic-auth-users-file (user:bcrypt-hash
lines), are shorthands for its tls_server_config and basic_auth_users
(docs/exporter.md).

Per-QP series (rdma_qp_info) are off; --collector.qp turns them on, at most
--collector.qp.limit of them (rdma_exporter_qp_series_dropped says how many
were left out).`,
		Example: `  rdmactl exporter
  rdmactl exporter --web.config.file=/etc/rdmactl/web-config.yml
  rdmactl exporter --web.tls-cert-file=/etc/rdmactl/tls.crt --web.tls-key-file=/etc/rdmactl/tls.key --web.basic-auth-users-file=/etc/rdmactl/users
  rdmactl exporter --once > /var/lib/node_exporter/textfile/rdma.prom.$$ && mv /var/lib/node_exporter/textfile/rdma.prom.$$ /var/lib/node_exporter/textfile/rdma.prom`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if fl.timeout < 10*time.Millisecond || fl.timeout > 10*time.Minute {
				return cmdutil.UsageErrorf("--timeout=%v: want 10ms to 10m", fl.timeout)
			}
			if fl.gidEvery < 0 {
				return cmdutil.UsageErrorf("--collector.gid.interval=%v: want 0 (every scrape) or more", fl.gidEvery)
			}
			if fl.qpLimit < 1 {
				return cmdutil.UsageErrorf("--collector.qp.limit=%d: want at least 1", fl.qpLimit)
			}
			col := exporter.New(exporter.Options{
				Open:    func() (*inventory.Source, func(), error) { return a.OpenInventory(true) },
				Timeout: fl.timeout, QP: fl.qp, QPLimit: fl.qpLimit, GIDInterval: fl.gidEvery,
			})
			if fl.once {
				return exportOnce(a, col)
			}
			return serveExporter(cmdutil.Watching(c), a, col, &fl)
		},
	}
	f := c.Flags()
	f.StringVar(&fl.listen, "web.listen-address", defaultListen, "`ADDRESS` to serve metrics on")
	f.StringVar(&fl.path, "web.telemetry-path", "/metrics", "`PATH` under which metrics are served")
	f.StringVar(&fl.tlsCert, "web.tls-cert-file", "", "serve HTTPS with this PEM certificate `FILE` (with --web.tls-key-file)")
	f.StringVar(&fl.tlsKey, "web.tls-key-file", "", "PEM private key `FILE` of --web.tls-cert-file")
	f.StringVar(&fl.authUsers, "web.basic-auth-users-file", "", "ask for basic auth: `FILE` of user:bcrypt-hash lines")
	f.StringVar(&fl.webConfig, "web.config.file", "", "exporter-toolkit's web config `FILE`: TLS, client certificates, basic auth, headers")
	f.BoolVar(&fl.once, "once", false, "write one exposition to stdout and exit (textfile collector)")
	f.DurationVar(&fl.timeout, "timeout", 10*time.Second, "longest a scrape waits for its inventory snapshot")
	f.BoolVar(&fl.qp, "collector.qp", false, "export one rdma_qp_info series per queue pair")
	f.IntVar(&fl.qpLimit, "collector.qp.limit", exporter.DefaultQPLimit, "at most `N` rdma_qp_info series")
	f.DurationVar(&fl.gidEvery, "collector.gid.interval", time.Minute, "read GID tables at most this often (0: every scrape); in between the last figures are served")
	f.BoolVar(&fl.goMetrics, "collector.go", true, "export the exporter's own go_* metrics")
	f.BoolVar(&fl.procMetric, "collector.process", true, "export the exporter's own process_* metrics")
	return c
}

// buildInfoMetric is rdma_exporter_build_info: which rdmactl answers.
func buildInfoMetric(a *cmdutil.App) promtext.Metric {
	bi := a.Stamp.Info()
	d := promtext.MustDesc("rdma_exporter_build_info", "rdmactl's version, commit and Go version, value 1.",
		promtext.Gauge, "version", "revision", "goversion")
	return promtext.Metric{Desc: d, Values: []string{bi.Version, bi.Commit, runtime.Version()}, Value: 1}
}

// exportOnce writes the RDMA series (no go_/process_ ones: those would be
// this short process's) in the text format. A failed snapshot is an error.
func exportOnce(a *cmdutil.App, col *exporter.Collector) error {
	ms := col.Collect()
	for _, m := range ms {
		if m.Desc.Name() == "rdma_exporter_scrape_success" && m.Value != 1 {
			return errors.New("exporter: no inventory snapshot within --timeout (or the device list failed)")
		}
	}
	return promtext.Write(a.Stdout, append(ms, buildInfoMetric(a)))
}

// serveExporter serves col until ctx is done (internal/exporter/web).
func serveExporter(ctx context.Context, a *cmdutil.App, col *exporter.Collector, fl *exporterFlags) error {
	err := web.Serve(ctx, col, web.Config{
		Listen: fl.listen, Path: fl.path, TLSCert: fl.tlsCert, TLSKey: fl.tlsKey, UsersFile: fl.authUsers, WebConfigFile: fl.webConfig,
		GoMetrics: fl.goMetrics, ProcessMetrics: fl.procMetric,
		Build: buildInfoMetric(a), Version: a.Stamp.Info().Version, Log: a.Stderr, ScrapeTimeout: fl.timeout,
	})
	var ce *web.ConfigError
	if errors.As(err, &ce) {
		return cmdutil.UsageErrorf("%v", err)
	}
	return err
}
