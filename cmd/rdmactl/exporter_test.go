package main

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/testexec"
	"github.com/rdmactl/rdmactl/internal/testpki"
)

const rxeSysfs = "../../internal/sysfs/testdata/rxe"
const mlx5Sysfs = "../../internal/sysfs/testdata/mlx5"

// parseExposition parses the text format into name -> family.
func parseExposition(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("exposition does not parse: %v", err)
	}
	return mfs
}

// find is the value of the series of name whose labels include want.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			return m.Counter.GetValue(), true
		}
		return m.Gauge.GetValue(), true
	}
	return 0, false
}

// TestExporterOnceMatchesCounters: `exporter --once` has one series for
// every counter `-j counters` lists, with its value in the same unit
// (bytes for port_xmit_data/port_rcv_data).
func TestExporterOnceMatchesCounters(t *testing.T) {
	for _, root := range []string{rxeSysfs, mlx5Sysfs} {
		out, stderr, code := runCmd(t, "--sysfs-root", root, "exporter", "--once")
		if code != 0 {
			t.Fatalf("exporter --once: %d %s", code, stderr)
		}
		mfs := parseExposition(t, strings.NewReader(out))
		cj, _, code := runCmd(t, "--sysfs-root", root, "-j", "counters")
		if code != 0 {
			t.Fatal("counters failed")
		}
		var rows []counterJSON
		if err := json.Unmarshal([]byte(cj), &rows); err != nil {
			t.Fatal(err)
		}
		if len(rows) < 20 {
			t.Fatalf("%s: %d counters", root, len(rows))
		}
		for _, r := range rows {
			name, _ := exporter.CounterMetric(r.Source, r.Name, r.Port)
			labels := map[string]string{"device": r.Ifname, "category": r.Category}
			if r.Port != 0 {
				labels["port"] = strconv.Itoa(int(r.Port))
			}
			v, ok := find(mfs, name, labels)
			if !ok || v != float64(r.Value) {
				t.Errorf("%s: %s/%d %s %s = %d: series %s %v (found %v)", root, r.Ifname, r.Port, r.Source, r.Name, r.Value, name, v, ok)
			}
		}
		if _, ok := mfs["go_goroutines"]; ok {
			t.Error("--once carries the exporter's own go_ metrics")
		}
		if v, ok := find(mfs, "rdma_exporter_scrape_success", nil); !ok || v != 1 {
			t.Errorf("scrape_success %v %v", v, ok)
		}
	}
}

// TestExporterBadInput: bad flags, TLS files and users files give one
// line and exit 2; a tree without devices fails --once with one line.
func TestExporterBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key := serverCert(t, dir)
	_, otherKey := serverCert(t, t.TempDir())
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	badUsers := filepath.Join(dir, "users")
	if err := os.WriteFile(badUsers, []byte("prom:plaintext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"exporter", "--timeout", "0s"},
		{"exporter", "--collector.qp.limit", "0"},
		{"exporter", "--web.telemetry-path", "metrics"},
		{"exporter", "--web.config.file", "/nonexistent/web.yml"},
		{"exporter", "--web.config.file", bad},
		{"exporter", "--web.tls-cert-file", cert},
		{"exporter", "--web.tls-key-file", key},
		{"exporter", "--web.tls-cert-file", cert, "--web.tls-key-file", otherKey},
		{"exporter", "--web.tls-cert-file", "/nonexistent.crt", "--web.tls-key-file", key},
		{"exporter", "--web.basic-auth-users-file", badUsers},
		{"exporter", "--web.basic-auth-users-file", "/nonexistent/users"},
		// Not files to read: refused at once, not read forever or blocked on.
		{"exporter", "--web.tls-cert-file", "/dev/zero", "--web.tls-key-file", key},
		{"exporter", "--web.tls-cert-file", cert, "--web.tls-key-file", fifo},
		{"exporter", "--web.basic-auth-users-file", "/dev/zero"},
		{"exporter", "--web.basic-auth-users-file", fifo},
		{"exporter", "extra"},
	} {
		_, stderr, code := runCmd(t, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	_, stderr, code := runCmd(t, "--sysfs-root", t.TempDir(), "exporter", "--once")
	if code != cmdutil.ExitFailure || strings.Count(stderr, "\n") != 1 {
		t.Errorf("empty tree --once: exit %d, stderr %q", code, stderr)
	}
}

// freeAddr is a loopback address nobody listens on (a small race with
// other processes, fine in tests).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startExporter runs `rdmactl ARGS --web.listen-address ADDR` in-process until the test ends and
// waits for it to answer.
func startExporter(t *testing.T, args ...string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var stderr strings.Builder
	go func() {
		defer close(done)
		run(ctx, append(args, "--web.listen-address", addr), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("exporter did not listen on %s: %s", addr, stderr.String())
	return ""
}

func get(t *testing.T, url, user, pass string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestExporterServes: /metrics has the RDMA series plus the exporter's
// own go_, process_ and build info; / is a landing page linking it.
func TestExporterServes(t *testing.T) {
	addr := startExporter(t, "exporter", "--sysfs-root", rxeSysfs)
	code, body := get(t, "http://"+addr+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d", code)
	}
	mfs := parseExposition(t, strings.NewReader(body))
	for _, n := range []string{"rdma_device_info", "rdma_hw_sent_pkts_total", "rdma_port_state_id", "go_goroutines",
		"process_open_fds", "rdma_exporter_build_info"} {
		if _, ok := mfs[n]; !ok {
			t.Errorf("no %s", n)
		}
	}
	if code, body := get(t, "http://"+addr+"/", "", ""); code != 200 || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("landing page: %d %.200q", code, body)
	}
}

// TestExporterBasicAuth: with a users file, a scrape without the
// password, with a wrong one or an unknown user is refused and one with
// it answers (twice: the second from the cache of checked passwords); a
// password changed in the file takes effect without a restart.
func TestExporterBasicAuth(t *testing.T) {
	hash := func(pw string) []byte {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte(fmt.Sprintf("# scrapers\nprom:%s\n\nother:%s\n", hash("s3cret"), hash("x"))), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startExporter(t, "exporter", "--sysfs-root", rxeSysfs, "--web.basic-auth-users-file", users)
	url := "http://" + addr + "/metrics"
	for _, up := range [][2]string{{"", ""}, {"prom", "wrong"}, {"nobody", "s3cret"}, {"other", "s3cret"}} {
		if code, _ := get(t, url, up[0], up[1]); code != http.StatusUnauthorized {
			t.Errorf("%q/%q: %d, want 401", up[0], up[1], code)
		}
	}
	for i := 0; i < 2; i++ {
		if code, body := get(t, url, "prom", "s3cret"); code != 200 || !strings.Contains(body, "rdma_device_info") {
			t.Errorf("right password, scrape %d: %d", i, code)
		}
	}
	// A new password: the file's mtime and size change.
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(users, []byte(fmt.Sprintf("prom:%s\n", hash("n3w"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, url, "prom", "s3cret"); code != http.StatusUnauthorized {
		t.Errorf("old password after the change: %d, want 401", code)
	}
	if code, _ := get(t, url, "prom", "n3w"); code != 200 {
		t.Errorf("new password: %d", code)
	}
}

// serverCert writes a certificate for 127.0.0.1 and its key, signed by
// a CA of its own (dir/ca.pem).
func serverCert(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	cert, key, _ = testpki.New(t, dir).Issue(t, "tls", "exporter", testpki.Server)
	return cert, key
}

// TestExporterTLS: with a certificate and key the exporter speaks HTTPS
// only, with that certificate.
func TestExporterTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := serverCert(t, dir)
	addr := startExporter(t, "exporter", "--sysfs-root", rxeSysfs, "--web.tls-cert-file", cert, "--web.tls-key-file", key)
	pemCert, _ := os.ReadFile(filepath.Join(dir, "ca.pem"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "rdma_device_info") || resp.TLS == nil {
		t.Errorf("https: %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
	if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain http answered 200 on the TLS port")
		}
		resp.Body.Close()
	}
}

// TestExporterHTTP: the content type of the text format 0.0.4, gzip when
// the scraper asks for it (as Prometheus does), the same series either way.
func TestExporterHTTP(t *testing.T) {
	addr := startExporter(t, "exporter", "--sysfs-root", rxeSysfs)
	for _, gz := range []bool{false, true} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip;q=1.0, identity;q=0.5")
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = resp.Body
		if gz {
			if resp.Header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("no gzip: %v", resp.Header)
			}
			if r, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		} else if resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("encoding %q unasked", resp.Header.Get("Content-Encoding"))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		mfs := parseExposition(t, r)
		resp.Body.Close()
		if _, ok := mfs["rdma_hw_sent_pkts_total"]; !ok {
			t.Errorf("gzip %v: no rdma_hw_sent_pkts_total", gz)
		}
	}
}

// procStat is what the soak compares: open fds, goroutines, RSS and the
// Go heap in use after a GC.
type procStat struct {
	fds, goroutines int
	rssKB, heapKB   uint64
}

func readProcStat(t *testing.T) procStat {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	st := procStat{fds: len(ents), goroutines: runtime.NumGoroutine(), heapKB: ms.HeapInuse / 1024}
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			st.rssKB, _ = strconv.ParseUint(f[1], 10, 64)
		}
	}
	return st
}

// soakExporter scrapes an in-process exporter n times over loopback (a
// new connection each 100th scrape, keep-alive otherwise, as Prometheus
// does) and fails if fds or goroutines grew or the heap more than doubled
// past a 4 MiB allowance. It prints the figures.
func soakExporter(t *testing.T, n int, args ...string) {
	addr := startExporter(t, args...)
	url := "http://" + addr + "/metrics"
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1}}
	scrape := func() {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "rdma_exporter_scrape_success 1") {
			t.Fatalf("scrape: %d %.300q", resp.StatusCode, b)
		}
	}
	for i := 0; i < 20; i++ { // warm up: the Desc cache, the HTTP pools
		scrape()
	}
	client.CloseIdleConnections()
	before := readProcStat(t)
	start := time.Now()
	for i := 0; i < n; i++ {
		scrape()
		if i%100 == 99 {
			client.CloseIdleConnections()
		}
	}
	took := time.Since(start)
	client.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond) // let the server notice closed connections
	after := readProcStat(t)
	t.Logf("soak: %d scrapes in %v (%.2f ms each): fds %d -> %d, goroutines %d -> %d, RSS %d -> %d KiB, heap in use %d -> %d KiB",
		n, took.Round(time.Millisecond), float64(took.Microseconds())/1000/float64(n),
		before.fds, after.fds, before.goroutines, after.goroutines, before.rssKB, after.rssKB, before.heapKB, after.heapKB)
	if after.fds > before.fds || after.goroutines > before.goroutines+1 || after.heapKB > 2*before.heapKB+4096 {
		t.Fatalf("grew over %d scrapes: fds %d -> %d, goroutines %d -> %d, heap %d -> %d KiB",
			n, before.fds, after.fds, before.goroutines, after.goroutines, before.heapKB, after.heapKB)
	}
}

// TestExporterSoak scrapes the captured rxe tree: RDMACTL_SOAK_N times
// (default 300; make soak-exporter runs 10,000 live in the VM).
func TestExporterSoak(t *testing.T) {
	n := 300
	if s := os.Getenv("RDMACTL_SOAK_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	soakExporter(t, n, "exporter", "--sysfs-root", rxeSysfs)
}

// TestExporterLowFileLimit: the exporter binary with a limit of 64 file
// descriptors serves 16 connections at once (half the limit less 16 kept
// for the rest of the process, internal/exporter/web maxConns). With 20
// clients that never finish a request a real scrape waits for a slot,
// which the read timeout (10 s) frees, and is served; the exporter never
// runs out of descriptors ("too many open files").
func TestExporterLowFileLimit(t *testing.T) {
	addr := freeAddr(t)
	self := testexec.Self("--sysfs-root", rxeTree, "exporter", "--web.listen-address", addr)
	// The hard limit too (sh's ulimit -n sets both): a Go program raises
	// its soft limit to the hard one at start.
	cmd := exec.Command("/bin/sh", append([]string{"-c", `ulimit -n 64 && exec "$@"`, "sh", self.Path}, self.Args[1:]...)...)
	cmd.Env = append(os.Environ(), "RDMACTL_TEST_AS_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(end) {
			t.Fatalf("exporter not listening: %s", stderr.String())
		}
	}
	for range 20 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // never ends its headers
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a scrape behind 20 slow clients with 64 descriptors: %v (stderr %q)", err, stderr.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	waited := time.Since(start)
	t.Logf("served after %v", waited.Round(time.Millisecond))
	// Served at once, the limit was not in effect: the 16 slots were full.
	if waited < 5*time.Second {
		t.Errorf("served after %v: the 20 slow clients did not fill the connection slots", waited)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), "rdma_port_state") {
		t.Errorf("scrape: %s, %d bytes", resp.Status, len(body))
	}
	if s := stderr.String(); strings.Contains(s, "too many open files") {
		t.Errorf("the exporter ran out of descriptors: %s", s)
	}
}
