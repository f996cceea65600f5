package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/inventory"
)

// defaultListen is the exporter's port, 9879: not in the copy of
// Prometheus's default port allocations page that could be read when it
// was chosen (docs/exporter.md says how far that check goes).
const defaultListen = ":9879"

type exporterFlags struct {
	listen     string
	path       string
	webConfig  string
	once       bool
	timeout    time.Duration
	qp         bool
	qpLimit    int
	goMetrics  bool
	procMetric bool
	gidEvery   time.Duration
}

func newExporterCmd(a *app) *cobra.Command {
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
collector). --web.config.file takes the Prometheus exporter-toolkit web
configuration (TLS, basic auth).

Per-QP series (rdma_qp_info) are off; --collector.qp turns them on, at most
--collector.qp.limit of them (rdma_exporter_qp_series_dropped says how many
were left out).`,
		Example: `  rdmactl exporter
  rdmactl exporter --web.listen-address=127.0.0.1:9879 --web.config.file=/etc/rdmactl/web.yml
  rdmactl exporter --once > /var/lib/node_exporter/textfile/rdma.prom.$$ && mv /var/lib/node_exporter/textfile/rdma.prom.$$ /var/lib/node_exporter/textfile/rdma.prom`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if fl.timeout < 10*time.Millisecond || fl.timeout > 10*time.Minute {
				return usageErrorf("--timeout=%v: want 10ms to 10m", fl.timeout)
			}
			if fl.gidEvery < 0 {
				return usageErrorf("--collector.gid.interval=%v: want 0 (every scrape) or more", fl.gidEvery)
			}
			if fl.qpLimit < 1 {
				return usageErrorf("--collector.qp.limit=%d: want at least 1", fl.qpLimit)
			}
			col := exporter.New(exporter.Options{
				Open:    func() (*inventory.Source, func(), error) { return a.openInventory(true) },
				Timeout: fl.timeout, QP: fl.qp, QPLimit: fl.qpLimit, GIDInterval: fl.gidEvery,
			})
			if fl.once {
				return exportOnce(a, col)
			}
			return serveExporter(c.Context(), a, col, &fl)
		},
	}
	f := c.Flags()
	f.StringVar(&fl.listen, "web.listen-address", defaultListen, "`ADDRESS` to serve metrics on")
	f.StringVar(&fl.path, "web.telemetry-path", "/metrics", "`PATH` under which metrics are served")
	f.StringVar(&fl.webConfig, "web.config.file", "", "exporter-toolkit web configuration `FILE` (TLS, basic auth)")
	f.BoolVar(&fl.once, "once", false, "write one exposition to stdout and exit (textfile collector)")
	f.DurationVar(&fl.timeout, "timeout", 10*time.Second, "longest a scrape waits for its inventory snapshot")
	f.BoolVar(&fl.qp, "collector.qp", false, "export one rdma_qp_info series per queue pair")
	f.IntVar(&fl.qpLimit, "collector.qp.limit", exporter.DefaultQPLimit, "at most `N` rdma_qp_info series")
	f.DurationVar(&fl.gidEvery, "collector.gid.interval", time.Minute, "read GID tables at most this often (0: every scrape); in between the last figures are served")
	f.BoolVar(&fl.goMetrics, "collector.go", true, "export the exporter's own go_* metrics")
	f.BoolVar(&fl.procMetric, "collector.process", true, "export the exporter's own process_* metrics")
	return c
}

// buildInfo is rdma_exporter_build_info: which rdmactl answers.
func buildInfoCollector() prometheus.Collector {
	bi := buildInfo()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rdma_exporter_build_info",
		Help: "rdmactl's version, commit and Go version, value 1.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Commit,
			"goversion": runtime.Version()},
	})
	g.Set(1)
	return g
}

// exportOnce writes the RDMA series (no go_/process_ ones: those would be
// this short process's) in the text format. A failed snapshot is an error.
func exportOnce(a *app, col *exporter.Collector) error {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col, buildInfoCollector())
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "rdma_exporter_scrape_success" && mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			return errors.New("exporter: no inventory snapshot within --timeout (or the device list failed)")
		}
	}
	enc := expfmt.NewEncoder(a.stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

func serveExporter(ctx context.Context, a *app, col *exporter.Collector, fl *exporterFlags) error {
	if fl.webConfig != "" {
		if err := web.Validate(fl.webConfig); err != nil {
			return usageErrorf("--web.config.file=%s: %v", fl.webConfig, oneLine(err.Error()))
		}
	}
	if fl.path == "" || fl.path[0] != '/' {
		return usageErrorf("--web.telemetry-path=%q: want a path starting with /", fl.path)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(col, buildInfoCollector())
	if fl.goMetrics {
		reg.MustRegister(collectors.NewGoCollector())
	}
	if fl.procMetric {
		reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	logger := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mux := http.NewServeMux()
	mux.Handle(fl.path, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError), ErrorHandling: promhttp.ContinueOnError,
		// Scrapes beyond this queue wait in the handler, not in new gathers.
		MaxRequestsInFlight: 4,
	}))
	if fl.path != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name: "rdmactl exporter", Description: "RDMA devices, ports and counters for Prometheus",
			Version: buildInfo().Version,
			Links:   []web.LandingLinks{{Address: fl.path, Text: "Metrics"}},
		})
		if err != nil {
			return err
		}
		mux.Handle("/", landing)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	listen := []string{fl.listen}
	systemd := false
	errc := make(chan error, 1)
	go func() {
		errc <- web.ListenAndServe(srv, &web.FlagConfig{WebListenAddresses: &listen, WebSystemdSocket: &systemd,
			WebConfigFile: &fl.webConfig}, logger)
	}()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("exporter: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-errc
		return nil
	}
}
