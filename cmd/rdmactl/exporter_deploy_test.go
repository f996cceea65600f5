package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

const deployDir = "../../deploy"

// readmeExporterArgs is the exporter command line the README documents:
// the first line of its exporter section that starts with
// "rdmactl exporter --web.listen-address", split into arguments.
func readmeExporterArgs(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "rdmactl exporter --web.listen-address") {
			return strings.Fields(l)[1:]
		}
	}
	t.Fatal("README.md documents no 'rdmactl exporter --web.listen-address...' command line")
	return nil
}

// TestDeploySystemdUnit: the unit passes systemd-analyze verify without a
// word (verify exits 0 on unknown keys, so its output must be empty too),
// with the binary path pointed at an executable that exists here, and
// runs the README's command line, which rdmactl accepts.
func TestDeploySystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "systemd", "rdmactl-exporter.service"))
	if err != nil {
		t.Fatal(err)
	}
	var exec0 []string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			exec0 = strings.Fields(v)
		}
	}
	if len(exec0) < 2 || exec0[0] != "/usr/local/bin/rdmactl" {
		t.Fatalf("ExecStart %q: want /usr/local/bin/rdmactl and the README's arguments", exec0)
	}
	if want := readmeExporterArgs(t); !slices.Equal(exec0[1:], want) {
		t.Errorf("ExecStart arguments %q, README documents %q", exec0[1:], want)
	}
	// The arguments parse: the same line with --once on a captured tree.
	if _, stderr, code := runCmd(t, append(exec0[1:], "--once", "--sysfs-root", rxeSysfs)...); code != 0 {
		t.Errorf("rdmactl %s --once: exit %d %s", strings.Join(exec0[1:], " "), code, stderr)
	}

	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing (Debian: the systemd package)")
		}
		t.Skip("systemd-analyze is not installed: the unit was not verified")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "rdmactl-exporter.service")
	if err := os.WriteFile(unit, []byte(strings.Replace(string(b), "/usr/local/bin/rdmactl", self, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// daemonSet is the part of the manifest the test checks.
type daemonSet struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				HostNetwork     bool `yaml:"hostNetwork"`
				SecurityContext struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
					RunAsUser    *int  `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				Containers []struct {
					Name    string   `yaml:"name"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Ports   []struct {
						ContainerPort int `yaml:"containerPort"`
					} `yaml:"ports"`
					SecurityContext struct {
						AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
						ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
						Privileged               *bool `yaml:"privileged"`
						Capabilities             struct {
							Add  []string `yaml:"add"`
							Drop []string `yaml:"drop"`
						} `yaml:"capabilities"`
					} `yaml:"securityContext"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
						ReadOnly  bool   `yaml:"readOnly"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name     string `yaml:"name"`
					HostPath *struct {
						Path string `yaml:"path"`
					} `yaml:"hostPath"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// TestDeployDaemonSet parses the manifest with go.yaml.in/yaml/v2 (a test
// dependency only: the binary links no YAML library) strictly (unknown fields of the
// checked part are fine, bad YAML is not) and checks it runs the README's
// command line with no privileges and /sys read-only. The command line
// runs here in-process; scripts/package_test.go's TestImage runs it from
// the image make package builds, as the manifest's user.
func TestDeployDaemonSet(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "kubernetes", "rdmactl-exporter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var ds daemonSet
	if err := yaml.Unmarshal(b, &ds); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
		t.Fatalf("%s %s, want apps/v1 DaemonSet", ds.APIVersion, ds.Kind)
	}
	tpl := ds.Spec.Template
	if len(ds.Spec.Selector.MatchLabels) == 0 {
		t.Error("no selector")
	}
	for k, v := range ds.Spec.Selector.MatchLabels {
		if tpl.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, tpl.Metadata.Labels)
		}
	}
	if len(tpl.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(tpl.Spec.Containers))
	}
	c := tpl.Spec.Containers[0]
	if want := readmeExporterArgs(t); !slices.Equal(c.Args, want) || len(c.Command) != 1 || filepath.Base(c.Command[0]) != "rdmactl" {
		t.Errorf("runs %q %q; README documents rdmactl %q", c.Command, c.Args, want)
	}
	if _, stderr, code := runCmd(t, append(slices.Clone(c.Args), "--once", "--sysfs-root", rxeSysfs)...); code != 0 {
		t.Errorf("rdmactl %s --once: exit %d %s", strings.Join(c.Args, " "), code, stderr)
	}
	sc := c.SecurityContext
	if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Add) != 0 ||
		!slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container security context grants more than needed: %+v", sc)
	}
	if p := tpl.Spec.SecurityContext; p.RunAsNonRoot == nil || !*p.RunAsNonRoot || p.RunAsUser == nil || *p.RunAsUser == 0 {
		t.Errorf("pod runs as root: %+v", p)
	}
	sysRO := false
	for _, m := range c.VolumeMounts {
		for _, v := range tpl.Spec.Volumes {
			if v.Name == m.Name && v.HostPath != nil && v.HostPath.Path == "/sys" {
				sysRO = m.MountPath == "/sys" && m.ReadOnly
			}
		}
		if !m.ReadOnly {
			t.Errorf("volume %s at %s is writable", m.Name, m.MountPath)
		}
	}
	if !sysRO {
		t.Error("the host's /sys is not mounted read-only at /sys")
	}
	port := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--web.listen-address="); ok {
			port = v[strings.LastIndexByte(v, ':')+1:]
		}
	}
	if len(c.Ports) != 1 || port == "" || tpl.Metadata.Annotations["prometheus.io/port"] != port ||
		strconv.Itoa(c.Ports[0].ContainerPort) != port {
		t.Errorf("listen port %q, containerPort %v, scrape annotation %q disagree", port, c.Ports, tpl.Metadata.Annotations["prometheus.io/port"])
	}
}

// exportedNames is every metric name the exporter can export: its fixed
// metrics (from the captured trees' expositions) and the counter metric of
// every counter name rdmactl knows (internal/vocab) from every source.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, root := range []string{rxeSysfs, mlx5Sysfs} {
		out, stderr, code := runCmd(t, "--sysfs-root", root, "exporter", "--once", "--collector.qp")
		if code != 0 {
			t.Fatalf("exporter --once: %s", stderr)
		}
		for n := range parseExposition(t, strings.NewReader(out)) {
			names[n] = true
		}
	}
	for _, n := range vocab.CounterNames() {
		for _, src := range []string{inventory.SrcCounters, inventory.SrcHWCounters} {
			for _, port := range []uint32{0, 1} {
				if m, _ := exporter.CounterMetric(src, n, port); m != "" {
					names[m] = true
				}
			}
		}
	}
	return names
}

var metricRef = regexp.MustCompile(`\brdma_[a-z0-9_]+\b`)

// TestDeployGrafanaDashboard: the dashboard is JSON, and every query (panel
// targets, template variables) names at least one rdma_ metric, each of
// which the exporter exports.
func TestDeployGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "rdmactl-exporter.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	var queries []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries = append(queries, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			queries = append(queries, v.Definition)
		}
	}
	if len(queries) < 10 {
		t.Fatalf("only %d queries", len(queries))
	}
	names := exportedNames(t)
	for _, q := range queries {
		refs := metricRef.FindAllString(q, -1)
		if len(refs) == 0 {
			t.Errorf("query %q names no rdma_ metric", q)
		}
		for _, r := range refs {
			if !names[r] {
				t.Errorf("query %q: the exporter exports no %s", q, r)
			}
		}
	}
}
