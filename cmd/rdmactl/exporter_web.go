package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

// buildInfoMetric is rdma_exporter_build_info: which rdmactl answers.
func buildInfoMetric() promtext.Metric {
	bi := buildInfo()
	d := promtext.MustDesc("rdma_exporter_build_info", "rdmactl's version, commit and Go version, value 1.",
		promtext.Gauge, "version", "revision", "goversion")
	return promtext.Metric{Desc: d, Values: []string{bi.Version, bi.Commit, runtime.Version()}, Value: 1}
}

// exportOnce writes the RDMA series (no go_/process_ ones: those would be
// this short process's) in the text format. A failed snapshot is an error.
func exportOnce(a *app, col *exporter.Collector) error {
	ms := col.Collect()
	for _, m := range ms {
		if m.Desc.Name() == "rdma_exporter_scrape_success" && m.Value != 1 {
			return errors.New("exporter: no inventory snapshot within --timeout (or the device list failed)")
		}
	}
	return promtext.Write(a.stdout, append(ms, buildInfoMetric()))
}

// inFlight is how many scrapes are served at once; more get 503, as
// client_golang's promhttp answers past MaxRequestsInFlight. They would
// only wait on the same snapshot.
const inFlight = 4

type metricsHandler struct {
	col        *exporter.Collector
	goMetrics  bool
	procMetric bool
	start      time.Time
	build      promtext.Metric
	sem        chan struct{}
	logger     *log.Logger
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	default:
		http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", inFlight), http.StatusServiceUnavailable)
		return
	}
	ms := append(h.col.Collect(), h.build)
	if h.goMetrics {
		ms = append(ms, exporter.GoMetrics()...)
	}
	if h.procMetric {
		ms = append(ms, exporter.ProcessMetrics(h.start)...)
	}
	w.Header().Set("Content-Type", promtext.ContentType)
	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Del("Content-Length")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close()
			gzipPool.Put(gz)
		}()
		out = gz
	}
	bw := bufio.NewWriterSize(out, 32<<10)
	err := promtext.Write(bw, ms)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if err != nil && errors.Is(err, promtext.ErrDuplicate) {
		h.logger.Printf("%s: %v", r.URL.Path, err) // the rest was served
	}
}

// gzipPool keeps gzip writers between scrapes: a new one allocates about
// 800 KB of compressor state, and the host soak spent a quarter of its
// handler time building them.
var gzipPool = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// acceptsGzip: gzip is among the Accept-Encoding codings (and not q=0).
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func landingPage(path string) http.Handler {
	page := fmt.Sprintf(`<!DOCTYPE html>
<html><head><title>rdmactl exporter</title></head>
<body><h1>rdmactl exporter</h1><p>RDMA devices, ports and counters for Prometheus (version %s)</p>
<ul><li><a href="%s">Metrics</a></li></ul></body></html>
`, html.EscapeString(buildInfo().Version), html.EscapeString(path))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})
}

func serveExporter(ctx context.Context, a *app, col *exporter.Collector, fl *exporterFlags) error {
	if fl.webConfig != "" {
		return usageErrorf("--web.config.file=%s: exporter-toolkit's YAML web config is not read; use --web.tls-cert-file, --web.tls-key-file and --web.basic-auth-users-file (docs/exporter.md)", fl.webConfig)
	}
	if fl.path == "" || fl.path[0] != '/' {
		return usageErrorf("--web.telemetry-path=%q: want a path starting with /", fl.path)
	}
	if (fl.tlsCert == "") != (fl.tlsKey == "") {
		return usageErrorf("--web.tls-cert-file and --web.tls-key-file go together")
	}
	var tlsCfg *tls.Config
	if fl.tlsCert != "" {
		kp := &keyPair{cert: fl.tlsCert, key: fl.tlsKey}
		if _, err := kp.get(nil); err != nil {
			return usageErrorf("--web.tls-cert-file=%s --web.tls-key-file=%s: %v", fl.tlsCert, fl.tlsKey, oneLine(err.Error()))
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}
	}
	logger := log.New(a.stderr, "rdmactl exporter: ", 0)
	var handler http.Handler
	mux := http.NewServeMux()
	handler = mux
	if fl.authUsers != "" {
		u := &userFile{path: fl.authUsers}
		if _, err := u.load(); err != nil {
			return usageErrorf("--web.basic-auth-users-file=%s: %v", fl.authUsers, oneLine(err.Error()))
		}
		handler = basicAuth(u, mux, logger)
	}
	mux.Handle(fl.path, &metricsHandler{col: col, goMetrics: fl.goMetrics, procMetric: fl.procMetric,
		start: time.Now(), build: buildInfoMetric(), sem: make(chan struct{}, inFlight), logger: logger})
	if fl.path != "/" {
		mux.Handle("/", landingPage(fl.path))
	}
	ln, err := net.Listen("tcp", fl.listen)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsCfg,
		ErrorLog: logger}
	errc := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
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

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	mod  time.Time
	size int64
}

func stamp(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{st.ModTime(), st.Size()}, nil
}

// keyPair loads the TLS certificate and key again when either file
// changes, so that a renewed certificate is served without a restart.
type keyPair struct {
	cert, key string

	mu     sync.Mutex
	stamps [2]fileStamp
	kp     *tls.Certificate
}

func (k *keyPair) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c, err := stamp(k.cert)
	if err != nil {
		return nil, err
	}
	p, err := stamp(k.key)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kp != nil && k.stamps == [2]fileStamp{c, p} {
		return k.kp, nil
	}
	kp, err := tls.LoadX509KeyPair(k.cert, k.key)
	if err != nil {
		return nil, err
	}
	k.kp, k.stamps = &kp, [2]fileStamp{c, p}
	return k.kp, nil
}

// userFile is the basic-auth users file, read again when it changes. A
// file that no longer parses refuses every scrape (and says so on stderr)
// rather than fall back to users it no longer lists.
type userFile struct {
	path string

	mu    sync.Mutex
	stamp fileStamp
	users map[string][]byte
}

func (u *userFile) load() (map[string][]byte, error) {
	st, err := stamp(u.path)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.users != nil && st == u.stamp {
		return u.users, nil
	}
	b, err := os.ReadFile(u.path)
	if err != nil {
		return nil, err
	}
	users, err := parseUsers(b)
	if err != nil {
		u.users = nil
		return nil, err
	}
	u.users, u.stamp = users, st
	return users, nil
}

// parseUsers reads lines of user:bcrypt-hash (htpasswd -B's format);
// blank lines and lines starting with # are skipped.
func parseUsers(b []byte) (map[string][]byte, error) {
	users := map[string][]byte{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("line %d: want user:bcrypt-hash", i+1)
		}
		if _, err := bcrypt.Cost([]byte(hash)); err != nil {
			return nil, fmt.Errorf("line %d (%s): not a bcrypt hash: %v", i+1, user, err)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %s twice", i+1, user)
		}
		users[user] = []byte(hash)
	}
	if len(users) == 0 {
		return nil, errors.New("no users")
	}
	return users, nil
}

// basicAuth lets a request through with a user and password of the
// file. bcrypt costs tens of milliseconds a check by design, so a
// successful check is remembered (by a hash of user, password and the
// user's bcrypt hash: a changed password misses) for the next scrapes.
func basicAuth(u *userFile, next http.Handler, logger *log.Logger) http.Handler {
	var mu sync.Mutex
	ok := map[[32]byte]bool{}
	dummy := sync.OnceValue(func() []byte { // compared against for an unknown user: same cost as a known one
		h, _ := bcrypt.GenerateFromPassword([]byte("rdmactl exporter: no such user"), bcrypt.DefaultCost)
		return h
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		users, err := u.load()
		if err != nil {
			logger.Printf("--web.basic-auth-users-file: %v", oneLine(err.Error()))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user, pass, given := r.BasicAuth()
		hash, known := users[user]
		if given {
			if !known {
				hash = dummy()
			}
			key := sha256.Sum256(bytes.Join([][]byte{[]byte(user), []byte(pass), hash}, []byte{0}))
			mu.Lock()
			hit := ok[key]
			mu.Unlock()
			if !hit && bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil {
				hit = true
				mu.Lock()
				if len(ok) >= 256 {
					clear(ok)
				}
				ok[key] = true
				mu.Unlock()
			}
			if hit && known {
				next.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="rdmactl exporter"`)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	})
}
