package web

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// WebConfig is exporter-toolkit's web configuration file
// (--web.config.file), with the meaning exporter-toolkit gives it
// (prometheus/exporter-toolkit web/tls_config.go, web/handler.go,
// docs/web-configuration.md): unknown keys are errors, relative file
// names are relative to the file's directory.
type WebConfig struct {
	TLS       TLSServerConfig
	HTTP2     bool              // http_server_config.http2 (default true)
	Headers   map[string]string // http_server_config.headers
	Users     map[string][]byte // basic_auth_users: user -> bcrypt hash
	RateEvery time.Duration     // rate_limit.interval (0: no limit)
	RateBurst int               // rate_limit.burst
}

// TLSServerConfig is the file's tls_server_config.
type TLSServerConfig struct {
	Cert, Key, ClientCA             string // inline PEM
	CertFile, KeyFile, ClientCAFile string
	ClientAuth                      string // a tls.ClientAuthType's name
	ClientAllowedSANs               []string
	MinVersion, MaxVersion          uint16
	CipherSuites                    []uint16
	CurvePreferences                []tls.CurveID
	PreferServerCipherSuites        bool
}

// enabled: the file asks for TLS (exporter-toolkit's IsEnabled).
func (t *TLSServerConfig) enabled() bool {
	return t.CertFile != "" || t.Cert != "" || t.KeyFile != "" || t.Key != "" ||
		t.ClientCAFile != "" || t.ClientCA != "" || t.ClientAuth != ""
}

// The names the file uses, built when a file is read: package-level
// maps would be built at every rdmactl command's start.

// webHeaders are the headers the file may set, and their allowed values
// where they form a closed set (exporter-toolkit web/handler.go's
// extraHTTPHeaders).
func webHeaders() map[string][]string {
	return map[string][]string{
		"Strict-Transport-Security": nil,
		"X-Content-Type-Options":    {"nosniff"},
		"X-Frame-Options":           {"deny", "sameorigin"},
		"X-XSS-Protection":          nil,
		"Content-Security-Policy":   nil,
	}
}

func tlsVersions() map[string]uint16 {
	return map[string]uint16{"TLS10": tls.VersionTLS10, "TLS11": tls.VersionTLS11,
		"TLS12": tls.VersionTLS12, "TLS13": tls.VersionTLS13}
}

func tlsCurves() map[string]tls.CurveID {
	return map[string]tls.CurveID{"CurveP256": tls.CurveP256, "CurveP384": tls.CurveP384,
		"CurveP521": tls.CurveP521, "X25519": tls.X25519}
}

// clientAuthType is client_auth_type's meaning ("RequireClientCert" is
// exporter-toolkit's old name for RequireAnyClientCert).
func clientAuthType(s string) (tls.ClientAuthType, bool) {
	switch s {
	case "", "NoClientCert":
		return tls.NoClientCert, true
	case "RequestClientCert":
		return tls.RequestClientCert, true
	case "RequireAnyClientCert", "RequireClientCert":
		return tls.RequireAnyClientCert, true
	case "VerifyClientCertIfGiven":
		return tls.VerifyClientCertIfGiven, true
	case "RequireAndVerifyClientCert":
		return tls.RequireAndVerifyClientCert, true
	}
	return tls.NoClientCert, false
}

// parseWebConfig reads the file's text; dir is its directory.
func parseWebConfig(src []byte, dir string) (*WebConfig, error) {
	root, err := parseYAML(src)
	if err != nil {
		return nil, err
	}
	c := &WebConfig{HTTP2: true, TLS: TLSServerConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13,
		PreferServerCipherSuites: true}}
	d := decoder{}
	d.mapping(root, "", map[string]func(*yamlNode, string){
		"tls_server_config": func(n *yamlNode, at string) { d.tls(n, at, &c.TLS) },
		"http_server_config": func(n *yamlNode, at string) {
			d.mapping(n, at, map[string]func(*yamlNode, string){
				"http2": func(n *yamlNode, at string) { c.HTTP2 = d.boolean(n, at) },
				"headers": func(n *yamlNode, at string) {
					c.Headers = d.stringMap(n, at)
					known := webHeaders()
					for _, k := range slices.Sorted(maps.Keys(c.Headers)) {
						allowed, ok := known[k]
						if !ok {
							d.fail(n, "%s: HTTP header %q can not be configured (only %s)", at, k, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
						} else if len(allowed) > 0 && !slices.Contains(allowed, c.Headers[k]) {
							d.fail(n, "%s: %s: %q, want one of %s", at, k, c.Headers[k], strings.Join(allowed, ", "))
						}
					}
				},
			})
		},
		"basic_auth_users": func(n *yamlNode, at string) {
			users := d.stringMap(n, at)
			for _, u := range slices.Sorted(maps.Keys(users)) {
				if _, err := bcrypt.Cost([]byte(users[u])); err != nil {
					d.fail(n, "%s: %s: not a bcrypt hash: %v", at, u, err)
				}
				if c.Users == nil {
					c.Users = map[string][]byte{}
				}
				c.Users[u] = []byte(users[u])
			}
		},
		"rate_limit": func(n *yamlNode, at string) {
			d.mapping(n, at, map[string]func(*yamlNode, string){
				"interval": func(n *yamlNode, at string) { c.RateEvery = d.duration(n, at) },
				"burst":    func(n *yamlNode, at string) { c.RateBurst = d.integer(n, at) },
			})
		},
	})
	if d.err != nil {
		return nil, d.err
	}
	t := &c.TLS
	for _, p := range []*string{&t.CertFile, &t.KeyFile, &t.ClientCAFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if t.enabled() {
		switch {
		case t.CertFile == "" && t.Cert == "":
			return nil, errors.New("tls_server_config: missing one of cert or cert_file")
		case t.KeyFile == "" && t.Key == "":
			return nil, errors.New("tls_server_config: missing one of key or key_file")
		case t.CertFile != "" && t.Cert != "":
			return nil, errors.New("tls_server_config: cert and cert_file both given: use one")
		case t.KeyFile != "" && t.Key != "":
			return nil, errors.New("tls_server_config: key and key_file both given: use one")
		case (t.ClientCAFile != "" || t.ClientCA != "") && (t.ClientAuth == "" || t.ClientAuth == "NoClientCert"):
			return nil, errors.New("tls_server_config: client CAs are configured without a client_auth_type")
		}
	}
	return c, nil
}

// decoder maps nodes onto the config, keeping the first error.
type decoder struct{ err error }

func (d *decoder) fail(n *yamlNode, format string, a ...any) {
	if d.err == nil {
		d.err = yamlErrorf(n.line, format, a...)
	}
}

// mapping calls fields[key] for each key of n; at names n's place
// (tls_server_config.cert_file) in errors. null is an empty mapping.
func (d *decoder) mapping(n *yamlNode, at string, fields map[string]func(*yamlNode, string)) {
	if n.kind == yamlNull {
		return
	}
	if n.kind != yamlMap {
		d.fail(n, "%s: want a mapping", orTop(at))
		return
	}
	for i, k := range n.keys {
		f, ok := fields[k]
		if !ok {
			d.fail(n.vals[i], "%s: unknown key %q (known: %s)", orTop(at), k, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
			return
		}
		sub := k
		if at != "" {
			sub = at + "." + k
		}
		f(n.vals[i], sub)
	}
}

func orTop(at string) string {
	if at == "" {
		return "the file"
	}
	return at
}

func (d *decoder) str(n *yamlNode, at string) string {
	switch n.kind {
	case yamlNull:
		return ""
	case yamlScalar:
		return n.text
	}
	d.fail(n, "%s: want a string", at)
	return ""
}

func (d *decoder) strings(n *yamlNode, at string) []string {
	if n.kind == yamlNull {
		return nil
	}
	if n.kind != yamlSeq {
		d.fail(n, "%s: want a list", at)
		return nil
	}
	out := []string{}
	for _, v := range n.vals {
		out = append(out, d.str(v, at))
	}
	return out
}

func (d *decoder) stringMap(n *yamlNode, at string) map[string]string {
	if n.kind == yamlNull {
		return nil
	}
	if n.kind != yamlMap {
		d.fail(n, "%s: want a mapping", at)
		return nil
	}
	out := map[string]string{}
	for i, k := range n.keys {
		out[k] = d.str(n.vals[i], at+"."+k)
	}
	return out
}

// boolean is YAML 1.1's booleans, as exporter-toolkit's YAML library reads
// them into a bool.
func (d *decoder) boolean(n *yamlNode, at string) bool {
	if n.kind == yamlScalar && !n.quoted {
		switch n.text {
		case "true", "True", "TRUE", "yes", "Yes", "YES", "y", "Y", "on", "On", "ON":
			return true
		case "false", "False", "FALSE", "no", "No", "NO", "n", "N", "off", "Off", "OFF":
			return false
		}
	}
	d.fail(n, "%s: want true or false", at)
	return false
}

func (d *decoder) integer(n *yamlNode, at string) int {
	if n.kind == yamlScalar && !n.quoted {
		if v, err := strconv.ParseInt(strings.ReplaceAll(n.text, "_", ""), 0, 32); err == nil {
			return int(v)
		}
	}
	d.fail(n, "%s: want an integer", at)
	return 0
}

// duration is a Go duration ("30s"), or an integer of nanoseconds.
func (d *decoder) duration(n *yamlNode, at string) time.Duration {
	if n.kind == yamlScalar {
		if v, err := time.ParseDuration(n.text); err == nil && v >= 0 {
			return v
		}
		if v, err := strconv.ParseInt(n.text, 10, 64); err == nil && v >= 0 && !n.quoted {
			return time.Duration(v)
		}
	}
	d.fail(n, "%s: want a duration such as 1s", at)
	return 0
}

func (d *decoder) tls(n *yamlNode, at string, t *TLSServerConfig) {
	str := func(p *string) func(*yamlNode, string) {
		return func(n *yamlNode, at string) { *p = d.str(n, at) }
	}
	version := func(p *uint16) func(*yamlNode, string) {
		return func(n *yamlNode, at string) {
			s := d.str(n, at)
			v, ok := tlsVersions()[s]
			if !ok && d.err == nil {
				d.fail(n, "%s: unknown TLS version %q (TLS10, TLS11, TLS12, TLS13)", at, s)
			}
			*p = v
		}
	}
	d.mapping(n, at, map[string]func(*yamlNode, string){
		"cert":                str(&t.Cert),
		"key":                 str(&t.Key),
		"client_ca":           str(&t.ClientCA),
		"cert_file":           str(&t.CertFile),
		"key_file":            str(&t.KeyFile),
		"client_ca_file":      str(&t.ClientCAFile),
		"client_allowed_sans": func(n *yamlNode, at string) { t.ClientAllowedSANs = d.strings(n, at) },
		"min_version":         version(&t.MinVersion),
		"max_version":         version(&t.MaxVersion),
		"client_auth_type": func(n *yamlNode, at string) {
			t.ClientAuth = d.str(n, at)
			if _, ok := clientAuthType(t.ClientAuth); !ok {
				d.fail(n, "%s: %q, want one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert", at, t.ClientAuth)
			}
		},
		"cipher_suites": func(n *yamlNode, at string) {
			for _, s := range d.strings(n, at) {
				i := slices.IndexFunc(tls.CipherSuites(), func(c *tls.CipherSuite) bool { return c.Name == s })
				if i < 0 {
					d.fail(n, "%s: unknown cipher suite %q (Go's crypto/tls CipherSuites names)", at, s)
					return
				}
				t.CipherSuites = append(t.CipherSuites, tls.CipherSuites()[i].ID)
			}
		},
		"curve_preferences": func(n *yamlNode, at string) {
			for _, s := range d.strings(n, at) {
				c, ok := tlsCurves()[s]
				if !ok {
					d.fail(n, "%s: unknown curve %q (CurveP256, CurveP384, CurveP521, X25519)", at, s)
					return
				}
				t.CurvePreferences = append(t.CurvePreferences, c)
			}
		},
		"prefer_server_cipher_suites": func(n *yamlNode, at string) { t.PreferServerCipherSuites = d.boolean(n, at) },
	})
}

// tlsConfig is the crypto/tls configuration of t, with its files read
// now (bounded, as every configuration file).
func (t *TLSServerConfig) tlsConfig() (*tls.Config, error) {
	certPEM, keyPEM := []byte(t.Cert), []byte(t.Key)
	var err error
	if t.CertFile != "" {
		if certPEM, err = readConfigFile(t.CertFile); err != nil {
			return nil, fmt.Errorf("cert_file: %w", err)
		}
	}
	if t.KeyFile != "" {
		if keyPEM, err = readConfigFile(t.KeyFile); err != nil {
			return nil, fmt.Errorf("key_file: %w", err)
		}
	}
	kp, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate and key: %v", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{kp}, MinVersion: t.MinVersion, MaxVersion: t.MaxVersion,
		CipherSuites: t.CipherSuites, CurvePreferences: t.CurvePreferences}
	cfg.ClientAuth, _ = clientAuthType(t.ClientAuth)
	caPEM := []byte(t.ClientCA)
	if t.ClientCAFile != "" {
		if caPEM, err = readConfigFile(t.ClientCAFile); err != nil {
			return nil, fmt.Errorf("client_ca_file: %w", err)
		}
	}
	if len(caPEM) > 0 {
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("client CA: no PEM certificate in it")
		}
	}
	if t.ClientAllowedSANs != nil {
		sans := t.ClientAllowedSANs
		cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("no client certificate")
			}
			c, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			names := slices.Concat(c.DNSNames, c.EmailAddresses)
			for _, ip := range c.IPAddresses {
				names = append(names, ip.String())
			}
			for _, u := range c.URIs {
				names = append(names, u.String())
			}
			for _, n := range names {
				if slices.Contains(sans, n) {
					return nil
				}
			}
			return fmt.Errorf("client certificate has none of the allowed SANs %v", sans)
		}
	}
	return cfg, nil
}

// webConfigFile is the web config file, read again when it or a file it
// names changes (exporter-toolkit reads it at every connection and
// request, so that certificates rotate without a restart).
type webConfigFile struct {
	path string

	mu     sync.Mutex
	stamps []fileStamp // of the kept reading; nil: none kept
	cfg    *WebConfig
	tls    *tls.Config
}

// load is the file's configuration now, and its TLS configuration when
// it has one. A reading is kept while neither the file nor a file it
// names changes; a failed one is not kept, so that a certificate missing
// for a moment (a renewal that deletes and recreates it) fails only the
// connections made in that moment.
func (w *webConfigFile) load() (*WebConfig, *tls.Config, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cfg != nil && w.stamps != nil {
		if st, ok := w.stampsOf(w.cfg); ok && slices.Equal(st, w.stamps) {
			return w.cfg, w.tls, nil
		}
	}
	before, ok := w.stampsOf(w.cfg)
	cfg, t, err := w.read()
	if err != nil {
		return nil, nil, err
	}
	w.cfg, w.tls, w.stamps = cfg, t, nil
	// Kept only if nothing changed while it was read (the files it names
	// may differ from the last reading's: then the next load keeps it).
	if after, ok2 := w.stampsOf(cfg); ok && ok2 && slices.Equal(before, after) {
		w.stamps = after
	}
	return cfg, t, nil
}

// stampsOf stamps the file and the files cfg names (none for nil).
func (w *webConfigFile) stampsOf(cfg *WebConfig) ([]fileStamp, bool) {
	paths := []string{w.path}
	if cfg != nil {
		paths = append(paths, cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile)
	}
	var out []fileStamp
	for _, p := range paths {
		if p == "" {
			continue
		}
		st, err := stamp(p)
		if err != nil {
			return nil, false
		}
		out = append(out, st)
	}
	return out, true
}

// tlsForClient is tls.Config.GetConfigForClient over the file: each
// connection's handshake takes the file's TLS configuration as it is
// then. A file that broke, or lost its TLS part, fails the handshake
// (the server was started serving TLS, which a running server cannot
// change).
func (w *webConfigFile) tlsForClient(http2 bool) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	protos := []string{"h2", "http/1.1"}
	if !http2 {
		protos = []string{"http/1.1"}
	}
	return func(*tls.ClientHelloInfo) (*tls.Config, error) {
		_, t, err := w.load()
		if err != nil {
			return nil, fmt.Errorf("--web.config.file: %v", firstLine(err.Error()))
		}
		if t == nil {
			return nil, errors.New("--web.config.file: tls_server_config was removed; restart the exporter to serve plain HTTP")
		}
		t = t.Clone()
		t.NextProtos = protos
		return t, nil
	}
}

func (w *webConfigFile) read() (*WebConfig, *tls.Config, error) {
	b, err := readConfigFile(w.path)
	if err != nil {
		return nil, nil, err
	}
	c, err := parseWebConfig(b, filepath.Dir(w.path))
	if err != nil {
		return nil, nil, err
	}
	if !c.TLS.enabled() {
		return c, nil, nil
	}
	t, err := c.TLS.tlsConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("tls_server_config: %w", err)
	}
	return c, t, nil
}

// webConfigHandler applies the file, as it is at each request, to next:
// rate limit, headers, basic auth (exporter-toolkit web/handler.go). The
// rate limit is the one the file had at start, as exporter-toolkit's.
func webConfigHandler(wf *webConfigFile, start *WebConfig, next http.Handler, logger *log.Logger) http.Handler {
	var lim *rateLimiter
	if start.RateEvery > 0 {
		lim = &rateLimiter{every: start.RateEvery, burst: float64(start.RateBurst), tokens: float64(start.RateBurst)}
	}
	users := func() (map[string][]byte, error) {
		c, _, err := wf.load()
		if err != nil {
			return nil, err
		}
		return c.Users, nil
	}
	auth := basicAuth(users, "--web.config.file", next, logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := wf.load()
		if err != nil {
			logger.Printf("--web.config.file: %v", firstLine(err.Error()))
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		if lim != nil && !lim.allow(time.Now()) {
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		for k, v := range c.Headers {
			w.Header().Set(k, v)
		}
		if len(c.Users) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		auth.ServeHTTP(w, r)
	})
}

// rateLimiter is a token bucket: a request every `every`, bursts of up to
// `burst` (a burst of 0 lets nothing through, as golang.org/x/time/rate).
type rateLimiter struct {
	every         time.Duration
	mu            sync.Mutex
	burst, tokens float64
	last          time.Time
}

func (l *rateLimiter) allow(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.every))
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}
