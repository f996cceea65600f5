// Package web serves an exporter.Collector's series to Prometheus over
// HTTP or HTTPS, with exporter-toolkit's conventions: its flags
// (--web.listen-address, --web.telemetry-path, --web.tls-cert-file,
// --web.tls-key-file, --web.basic-auth-users-file), a landing page, gzip
// when the scraper asks, 503 past a few scrapes at once, and the TLS key
// pair and the users file read again when they change.
package web

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
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

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
	ms := h.col.Collect()
	if h.build.Desc != nil {
		ms = append(ms, h.build)
	}
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

func landingPage(path, version string) http.Handler {
	page := fmt.Sprintf(`<!DOCTYPE html>
<html><head><title>rdmactl exporter</title></head>
<body><h1>rdmactl exporter</h1><p>RDMA devices, ports and counters for Prometheus (version %s)</p>
<ul><li><a href="%s">Metrics</a></li></ul></body></html>
`, html.EscapeString(version), html.EscapeString(path))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	})
}

// Config is what Serve serves, with the flags of exporter-toolkit's
// exporters (named in ConfigError's lines).
type Config struct {
	Listen    string // --web.listen-address
	Path      string // --web.telemetry-path
	TLSCert   string // --web.tls-cert-file
	TLSKey    string // --web.tls-key-file
	UsersFile string // --web.basic-auth-users-file
	// WebConfigFile is exporter-toolkit's web config (--web.config.file),
	// read again at every connection and request; the three flags above
	// are shorthands for part of it, and go without it.
	WebConfigFile string
	// GoMetrics and ProcessMetrics add the go_ and process_ series.
	GoMetrics, ProcessMetrics bool
	// Build is the build-info series every scrape ends with (none if its
	// Desc is nil); Version the version the landing page names.
	Build   promtext.Metric
	Version string
	// Log gets the server's error lines.
	Log io.Writer
	// ScrapeTimeout is the longest a scrape's snapshot may take (the
	// collector's --timeout): the write deadline leaves it that much.
	ScrapeTimeout time.Duration

	// Tests shorten the connection bounds (0: the constants below).
	readTimeout, idleTimeout time.Duration
	conns                    int
}

// bcryptAtOnce is how many password checks run at once.
const bcryptAtOnce = 2

// Connection bounds. A client that sends its request slowly, or never,
// or keeps an idle connection, is cut within these; the number of open
// connections stays below the file limit, so that slow clients cannot
// make real scrapes fail with "too many open files" (accept waits for a
// slot instead, and slots free up within the timeouts).
const (
	readTimeout  = 10 * time.Second // the whole request: a GET, no body
	idleTimeout  = 60 * time.Second // keep-alive between scrapes
	writeMargin  = 30 * time.Second // beyond the snapshot's own timeout
	maxHeader    = 16 << 10
	maxConnsCap  = 256
	minConnsHold = 16 // fds kept free for the rest of the process
)

// ConfigError is a Config value Serve refuses: the caller's usage error.
type ConfigError struct{ msg string }

func (e *ConfigError) Error() string { return e.msg }

func configErrorf(format string, a ...any) error {
	return &ConfigError{msg: fmt.Sprintf(format, a...)}
}

// Serve serves col's series over HTTP (or HTTPS) until ctx is done.
func Serve(ctx context.Context, col *exporter.Collector, cfg Config) error {
	if cfg.Path == "" || cfg.Path[0] != '/' {
		return configErrorf("--web.telemetry-path=%q: want a path starting with /", cfg.Path)
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return configErrorf("--web.tls-cert-file and --web.tls-key-file go together")
	}
	if cfg.WebConfigFile != "" && (cfg.TLSCert != "" || cfg.TLSKey != "" || cfg.UsersFile != "") {
		return configErrorf("--web.config.file=%s and --web.tls-cert-file, --web.tls-key-file or --web.basic-auth-users-file: use one (those flags are shorthands for the file's tls_server_config and basic_auth_users)", cfg.WebConfigFile)
	}
	var tlsCfg *tls.Config
	var wf *webConfigFile
	var startCfg *WebConfig
	if cfg.WebConfigFile != "" {
		wf = &webConfigFile{path: cfg.WebConfigFile}
		c, t, err := wf.load()
		if err != nil {
			return configErrorf("--web.config.file=%s: %v", cfg.WebConfigFile, firstLine(err.Error()))
		}
		startCfg = c
		if t != nil {
			tlsCfg = &tls.Config{GetConfigForClient: wf.tlsForClient(c.HTTP2)}
		}
	}
	if cfg.TLSCert != "" {
		kp := &keyPair{cert: cfg.TLSCert, key: cfg.TLSKey}
		if _, err := kp.get(nil); err != nil {
			return configErrorf("--web.tls-cert-file=%s --web.tls-key-file=%s: %v", cfg.TLSCert, cfg.TLSKey, firstLine(err.Error()))
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: kp.get}
	}
	logOut := cfg.Log
	if logOut == nil {
		logOut = io.Discard
	}
	logger := log.New(logOut, "rdmactl exporter: ", 0)
	var handler http.Handler
	mux := http.NewServeMux()
	handler = mux
	if wf != nil {
		handler = webConfigHandler(wf, startCfg, mux, logger)
	}
	if cfg.UsersFile != "" {
		u := &userFile{path: cfg.UsersFile}
		if _, err := u.load(); err != nil {
			return configErrorf("--web.basic-auth-users-file=%s: %v", cfg.UsersFile, firstLine(err.Error()))
		}
		handler = basicAuth(u.load, "--web.basic-auth-users-file", mux, logger)
	}
	mux.Handle(cfg.Path, &metricsHandler{col: col, goMetrics: cfg.GoMetrics, procMetric: cfg.ProcessMetrics,
		start: time.Now(), build: cfg.Build, sem: make(chan struct{}, inFlight), logger: logger})
	if cfg.Path != "/" {
		mux.Handle("/", landingPage(cfg.Path, cfg.Version))
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	rt, it, n := readTimeout, idleTimeout, maxConns()
	if cfg.readTimeout > 0 {
		rt = cfg.readTimeout
	}
	if cfg.idleTimeout > 0 {
		it = cfg.idleTimeout
	}
	if cfg.conns > 0 {
		n = cfg.conns
	}
	ln = limitListener(ln, n)
	srv := &http.Server{Handler: handler, TLSConfig: tlsCfg, ErrorLog: logger,
		ReadHeaderTimeout: rt, ReadTimeout: rt, IdleTimeout: it,
		WriteTimeout: cfg.ScrapeTimeout + writeMargin, MaxHeaderBytes: maxHeader}
	if startCfg != nil && !startCfg.HTTP2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
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

// fileStamp tells whether a file changed since it was read: its time,
// size and inode (a certificate renewed by renaming a new file over the
// old one is another inode, whatever its time says).
type fileStamp struct {
	mod  time.Time
	size int64
	ino  uint64
}

func stamp(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	fs := fileStamp{mod: st.ModTime(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		fs.ino = sys.Ino
	}
	return fs, nil
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
	certPEM, err := readConfigFile(k.cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readConfigFile(k.key)
	if err != nil {
		return nil, err
	}
	kp, err := tls.X509KeyPair(certPEM, keyPEM)
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
	b, err := readConfigFile(u.path)
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
// users gives the users and their hashes now; what names their source in
// the log line of a failure.
func basicAuth(users func() (map[string][]byte, error), what string, next http.Handler, logger *log.Logger) http.Handler {
	var mu sync.Mutex
	ok := map[[32]byte]bool{}
	// An unknown user is checked against a hash of the file's highest
	// cost, so that a wrong name takes as long as a wrong password:
	// names do not leak by timing.
	dummies := map[int][]byte{}
	dummy := func(users map[string][]byte) []byte {
		cost := bcrypt.DefaultCost
		for _, h := range users {
			if c, err := bcrypt.Cost(h); err == nil && c > cost {
				cost = c
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if h, ok := dummies[cost]; ok {
			return h
		}
		h, _ := bcrypt.GenerateFromPassword([]byte("rdmactl exporter: no such user"), cost)
		dummies[cost] = h
		return h
	}
	// bcrypt costs tens of milliseconds of CPU a check, by design: at
	// most bcryptAtOnce run at once, and a burst of requests with bad
	// credentials waits its turn (or its client gives up) instead of
	// taking every core.
	checks := make(chan struct{}, bcryptAtOnce)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		users, err := users()
		if err != nil {
			logger.Printf("%s: %v", what, firstLine(err.Error()))
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user, pass, given := r.BasicAuth()
		hash, known := users[user]
		if given {
			if !known {
				hash = dummy(users)
			}
			key := sha256.Sum256(bytes.Join([][]byte{[]byte(user), []byte(pass), hash}, []byte{0}))
			mu.Lock()
			hit := ok[key]
			mu.Unlock()
			if !hit {
				select {
				case checks <- struct{}{}:
				case <-r.Context().Done():
					return
				}
				hit = bcrypt.CompareHashAndPassword(hash, []byte(pass)) == nil
				<-checks
				if hit {
					mu.Lock()
					if len(ok) >= 256 {
						clear(ok)
					}
					ok[key] = true
					mu.Unlock()
				}
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

// firstLine keeps an error line to its first line.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// maxConfigFile bounds a certificate, key or users file: far above any
// real one (a certificate chain is a few KB).
const maxConfigFile = 1 << 20

// readConfigFile reads a configuration file the exporter was pointed at:
// a regular file of at most maxConfigFile bytes. /dev/zero as a
// certificate would otherwise be read until memory runs out, and a FIFO
// would block the exporter before it listens, deaf to SIGINT and SIGTERM
// (opened O_NONBLOCK, a FIFO opens at once and is refused here).
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfigFile {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a certificate, key or users file", path, maxConfigFile)
	}
	return b, nil
}

// maxConns is how many connections are open at once: half the file limit
// (RLIMIT_NOFILE) less what the process keeps for itself, at most
// maxConnsCap, at least 1.
func maxConns() int {
	var rl syscall.Rlimit
	n := maxConnsCap
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < uint64(2*(maxConnsCap+minConnsHold)) {
		n = int(rl.Cur)/2 - minConnsHold
	}
	return max(n, 1)
}

// limitListener accepts at most n connections at once: Accept waits for
// one to close (a semaphore of n slots, released by the connection's
// Close).
func limitListener(l net.Listener, n int) net.Listener {
	return &limitedListener{Listener: l, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

type limitedListener struct {
	net.Listener
	sem       chan struct{}
	closed    chan struct{} // Close: an Accept waiting for a slot returns
	closeOnce sync.Once
}

func (l *limitedListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.closed) })
	return err
}

func (l *limitedListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
