package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/rdmactl/rdmactl/internal/exporter"
	"github.com/rdmactl/rdmactl/internal/inventory"
)

// serve starts Serve on a free loopback port with cfg's bounds and
// returns the address; the server stops at the test's end.
func serve(t *testing.T, cfg Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = l.Addr().String()
	l.Close()
	if cfg.Path == "" {
		cfg.Path = "/metrics"
	}
	col := exporter.New(exporter.Options{Timeout: 10 * time.Second,
		Open: func() (*inventory.Source, func(), error) {
			return inventory.Captured("../../sysfs/testdata/rxe"), func() {}, nil
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, col, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve still running 10 s after its context ended")
		}
	})
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", cfg.Listen); err == nil {
			c.Close()
			return cfg.Listen
		}
	}
	t.Fatal("not listening")
	return ""
}

// TestSlowClientsCut: a client that never finishes its request, and one
// that keeps an idle connection, are cut within the bounds, and with
// every connection slot taken by them a real scrape is served once they
// are (it waits for a slot; it does not fail).
func TestSlowClientsCut(t *testing.T) {
	addr := serve(t, Config{readTimeout: 500 * time.Millisecond, idleTimeout: 500 * time.Millisecond, conns: 2})
	var slow []net.Conn
	for i := range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i == 0 {
			fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // never ends its headers
		} else {
			fmt.Fprintf(c, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc") // nor its body
		}
		slow = append(slow, c)
	}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a scrape behind two slow clients: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("scrape: %s", resp.Status)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the scrape waited %v for a slot", d)
	}
	for i, c := range slow {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(bufio.NewReader(c)); err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
			t.Errorf("slow client %d not cut within 5 s: %v", i, err)
		}
	}
}

func isReset(err error) bool { return strings.Contains(err.Error(), "reset") }

// TestUnknownUserCostsAsAWrongPassword: with a user whose hash costs 12,
// a wrong password and an unknown name take about as long (the name is
// checked against a dummy hash of the file's highest cost).
func TestUnknownUserCostsAsAWrongPassword(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("right"), 12)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(users, []byte("prom:"+string(h)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serve(t, Config{UsersFile: users})
	get := func(user, pass string) (int, time.Duration) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
		req.SetBasicAuth(user, pass)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start)
	}
	get("nobody", "x") // the dummy hash is made on first use
	var wrong, unknown time.Duration
	for range 3 {
		code, d := get("prom", "wrong")
		if code != 401 {
			t.Fatalf("wrong password: %d", code)
		}
		wrong += d
		code, d = get("nobody", "wrong")
		if code != 401 {
			t.Fatalf("unknown user: %d", code)
		}
		unknown += d
	}
	if r := float64(unknown) / float64(wrong); r < 0.5 || r > 2 {
		t.Errorf("unknown user %v, wrong password %v (3 each): a name shows by its time", unknown, wrong)
	}
	if code, _ := get("prom", "right"); code != 200 {
		t.Errorf("right password: %d", code)
	}
}
