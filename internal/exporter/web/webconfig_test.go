package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/testpki"
)

// TestParseWebConfig: exporter-toolkit's web config files, as
// exporter-toolkit reads them (docs/web-configuration.md): defaults,
// relative names, inline PEM, and each refusal naming its line and key.
func TestParseWebConfig(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("pw"), 4)
	c, err := parseWebConfig([]byte(`# TLS and basic authentication
tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: "RequireAndVerifyClientCert"
  client_ca_file: ca.pem
  client_allowed_sans: [prometheus.example, "10.0.0.1"]
  min_version: TLS13
  cipher_suites:
    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
  curve_preferences: [X25519, CurveP256]
  prefer_server_cipher_suites: no
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000
basic_auth_users:
  alice: `+string(hash)+`
rate_limit:
  interval: "1s"
  burst: 20
`), "/etc/rdmactl")
	if err != nil {
		t.Fatal(err)
	}
	tc := c.TLS
	if tc.CertFile != "/etc/rdmactl/server.crt" || tc.KeyFile != "/abs/server.key" || tc.ClientCAFile != "/etc/rdmactl/ca.pem" ||
		tc.ClientAuth != "RequireAndVerifyClientCert" || strings.Join(tc.ClientAllowedSANs, ",") != "prometheus.example,10.0.0.1" ||
		tc.MinVersion != tls.VersionTLS13 || tc.MaxVersion != tls.VersionTLS13 || len(tc.CipherSuites) != 1 ||
		tc.CipherSuites[0] != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 || len(tc.CurvePreferences) != 2 ||
		tc.CurvePreferences[0] != tls.X25519 || tc.PreferServerCipherSuites {
		t.Errorf("tls_server_config: %+v", tc)
	}
	if c.HTTP2 || c.Headers["X-Frame-Options"] != "deny" || c.Headers["Strict-Transport-Security"] != "max-age=31536000" ||
		string(c.Users["alice"]) != string(hash) || c.RateEvery != time.Second || c.RateBurst != 20 {
		t.Errorf("config: %+v", c)
	}
	// Defaults: an empty file serves plain HTTP without auth.
	c, err = parseWebConfig(nil, "/x")
	if err != nil || c.TLS.enabled() || !c.HTTP2 || c.TLS.MinVersion != tls.VersionTLS12 || !c.TLS.PreferServerCipherSuites || c.Users != nil {
		t.Errorf("empty file: %+v, %v", c, err)
	}
	c, err = parseWebConfig([]byte("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: NoClientCert\n"), "/x")
	if err != nil || !c.TLS.enabled() {
		t.Errorf("NoClientCert without a CA: %+v, %v", c, err)
	}
	c, err = parseWebConfig([]byte("tls_server_config:\n  cert: |\n    -----BEGIN CERTIFICATE-----\n    MIIB\n    -----END CERTIFICATE-----\n  key: \"k\"\n"), "/x")
	if err != nil || c.TLS.Cert != "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n" || c.TLS.Key != "k" {
		t.Errorf("inline PEM: %+v, %v", c, err)
	}
	for _, b := range []struct{ in, want string }{
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  junk: 1\n", `line 4: tls_server_config: unknown key "junk"`},
		{"junk: 1\n", `line 1: the file: unknown key "junk"`},
		{"just text\n", "line 1: the file: want a mapping"},
		{"tls_server_config:\n  key_file: b\n", "missing one of cert or cert_file"},
		{"tls_server_config:\n  cert_file: a\n", "missing one of key or key_file"},
		{"tls_server_config:\n  cert_file: a\n  cert: b\n  key_file: c\n", "cert and cert_file both given"},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_INVENTED_CIPHER]\n", `unknown cipher suite "TLS_INVENTED_CIPHER"`},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [CurveP999]\n", `unknown curve "CurveP999"`},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS111\n", `unknown TLS version "TLS111"`},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Maybe\n", `"Maybe", want one of`},
		{"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n", "client CAs are configured without a client_auth_type"},
		{"http_server_config:\n  headers:\n    Server: x\n", `HTTP header "Server" can not be configured`},
		{"http_server_config:\n  headers:\n    X-Frame-Options: allow\n", `X-Frame-Options: "allow", want one of deny, sameorigin`},
		{"http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n", "want one of nosniff"},
		{"http_server_config:\n  http2: maybe\n", "line 2: http_server_config.http2: want true or false"},
		{"basic_auth_users:\n  alice: plaintext\n", "line 2: basic_auth_users: alice: not a bcrypt hash"},
		{"basic_auth_users: [alice]\n", "basic_auth_users: want a mapping"},
		{"rate_limit:\n  interval: soon\n", "rate_limit.interval: want a duration"},
		{"rate_limit:\n  burst: many\n", "rate_limit.burst: want an integer"},
		{"tls_server_config:\n  cipher_suites: TLS_AES_128_GCM_SHA256\n", "cipher_suites: want a list"},
	} {
		_, err := parseWebConfig([]byte(b.in), "/x")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: %v, want %q", b.in, err, b.want)
		}
	}
}

// replaceFile writes path anew by renaming a new file over it, as
// configuration management and certificate renewal do.
func replaceFile(t *testing.T, path string, b []byte) {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestWebConfigMutualTLS: with client certificates required and basic
// auth, the right certificate and password get the metrics; a wrong or
// missing password 401; no certificate, or one the CA did not sign, is
// refused at the handshake. Files replaced while the exporter runs take
// effect on the next connection: a renewed server certificate, new
// users, a narrowed list of allowed client names.
func TestWebConfigMutualTLS(t *testing.T) {
	p := testpki.New(t, t.TempDir())
	p.Issue(t, "server", "exporter", testpki.Server)
	clientCrt, clientKey, _ := p.Issue(t, "client", "prometheus", testpki.Client)
	strangerCrt, strangerKey, _ := p.Issue(t, "stranger", "prometheus", testpki.Stranger)
	hash, _ := bcrypt.GenerateFromPassword([]byte("secret"), 4)
	cfgPath := filepath.Join(p.Dir, "web.yml")
	config := func(users, extra string) []byte {
		return []byte(`tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.pem
` + extra + `http_server_config:
  headers:
    X-Frame-Options: deny
basic_auth_users:
` + users)
	}
	replaceFile(t, cfgPath, config("  prom: "+string(hash)+"\n", ""))
	addr := serve(t, Config{WebConfigFile: cfgPath})

	roots := x509.NewCertPool()
	roots.AddCert(p.CA)
	get := func(crt, key, user, pass string) (*http.Response, error) {
		tc := &tls.Config{RootCAs: roots}
		if crt != "" {
			kp, err := tls.LoadX509KeyPair(crt, key)
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{kp}
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
		req, _ := http.NewRequest("GET", "https://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	status := func(crt, key, user, pass string) int {
		resp, err := get(crt, key, user, pass)
		if err != nil {
			t.Fatalf("%s as %s: %v", filepath.Base(crt), user, err)
		}
		return resp.StatusCode
	}
	resp, err := get(clientCrt, clientKey, "prom", "secret")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Frame-Options") != "deny" {
		t.Fatalf("right certificate and password: %v %v", resp, err)
	}
	if s := status(clientCrt, clientKey, "prom", "wrong"); s != 401 {
		t.Errorf("wrong password: %d, want 401", s)
	}
	if s := status(clientCrt, clientKey, "", ""); s != 401 {
		t.Errorf("no password: %d, want 401", s)
	}
	for name, files := range map[string][2]string{"no certificate": {}, "a stranger's certificate": {strangerCrt, strangerKey}} {
		if _, err := get(files[0], files[1], "prom", "secret"); err == nil {
			t.Errorf("%s: served, want the handshake refused", name)
		}
	}

	// A renewed server certificate is served on the next connection.
	_, _, serial := p.Issue(t, "server", "exporter", testpki.Server)
	resp, err = get(clientCrt, clientKey, "prom", "secret")
	if err != nil || resp.TLS == nil || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != serial {
		t.Errorf("after renewal: %v, want the certificate of serial %d", err, serial)
	}
	// Renewal that deletes the certificate and writes it again: a
	// connection in between fails, the next one gets the new certificate
	// (the failure is not kept while the config file stays the same).
	os.Remove(filepath.Join(p.Dir, "server.crt"))
	if _, err := get(clientCrt, clientKey, "prom", "secret"); err == nil {
		t.Error("served without a certificate file")
	}
	_, _, serial = p.Issue(t, "server", "exporter", testpki.Server)
	resp, err = get(clientCrt, clientKey, "prom", "secret")
	if err != nil || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != serial {
		t.Errorf("after the certificate came back: %v, want serial %d", err, serial)
	}
	// New users: the old password no longer works, the new one does.
	hash2, _ := bcrypt.GenerateFromPassword([]byte("rotated"), 4)
	replaceFile(t, cfgPath, config("  prom: "+string(hash2)+"\n", ""))
	if s := status(clientCrt, clientKey, "prom", "secret"); s != 401 {
		t.Errorf("old password after the users changed: %d, want 401", s)
	}
	if s := status(clientCrt, clientKey, "prom", "rotated"); s != 200 {
		t.Errorf("new password: %d, want 200", s)
	}
	// client_allowed_sans that do not name the client: refused.
	replaceFile(t, cfgPath, config("  prom: "+string(hash2)+"\n", "  client_allowed_sans: [grafana]\n"))
	if _, err := get(clientCrt, clientKey, "prom", "rotated"); err == nil {
		t.Error("client not in client_allowed_sans: served")
	}
	// A file broken while running refuses connections, and says why.
	replaceFile(t, cfgPath, []byte("tls_server_config: [\n"))
	if _, err := get(clientCrt, clientKey, "prom", "rotated"); err == nil {
		t.Error("broken file: served")
	}
}

// TestWebConfigPlain: without tls_server_config the file still brings
// basic auth, headers and the rate limit (429 beyond the burst).
func TestWebConfigPlain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, []byte("rate_limit:\n  interval: 1h\n  burst: 2\nhttp_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serve(t, Config{WebConfigFile: path})
	var codes []int
	for range 3 {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 200 && resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Error("header not set")
		}
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Errorf("statuses %v, want 200 200 429", codes)
	}
}

// TestWebConfigRefused: a file that does not parse, one that is not a
// regular file (/dev/zero, a FIFO), and the file with the flags it
// stands for, are refused at start, in one line, at once.
func TestWebConfigRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: x\n"), 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	col := exporter.New(exporter.Options{Timeout: time.Second})
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{WebConfigFile: bad}, "missing one of key or key_file"},
		{Config{WebConfigFile: filepath.Join(dir, "none.yml")}, "no such file"},
		{Config{WebConfigFile: "/dev/zero"}, "not a regular file"},
		{Config{WebConfigFile: fifo}, "not a regular file"},
		{Config{WebConfigFile: bad, UsersFile: bad}, "use one"},
	} {
		c.cfg.Path, c.cfg.Listen = "/metrics", "127.0.0.1:0"
		done := make(chan error, 1)
		go func() { done <- Serve(context.Background(), col, c.cfg) }()
		select {
		case err := <-done:
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%+v: %v, want one line saying %q", c.cfg, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v: still starting after 5 s", c.cfg)
		}
	}
}
