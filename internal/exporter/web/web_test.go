package web

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{"gzip": true, "deflate, gzip": true, "gzip;q=0": false, "identity": false, "": false, "x-gzip": false} {
		if acceptsGzip(h) != want {
			t.Errorf("acceptsGzip(%q) = %v", h, !want)
		}
	}
}

// FuzzParseUsers: any users file gives users each with a bcrypt hash and
// no ':' in the name, or an error; never a panic.
func FuzzParseUsers(f *testing.F) {
	f.Add([]byte("prom:$2a$04$jBGmyhb4GSbfIT0sOxAv3uSzDxU2qJ4kAv2ugO3y4AhU/4T8rwSXC\n"))
	f.Add([]byte("# c\n\n a:$2y$10$abc\n"))
	f.Add([]byte(":x\nprom\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := parseUsers(b)
		if err != nil {
			return
		}
		if len(users) == 0 {
			t.Fatal("no users, no error")
		}
		for u, h := range users {
			if u == "" || strings.Contains(u, ":") {
				t.Fatalf("user %q", u)
			}
			if _, err := bcrypt.Cost(h); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
		}
	})
}

// TestReadConfigFile: certificates, keys and users files are regular files
// of at most maxConfigFile bytes; /dev/zero, a FIFO (which would block
// before the exporter listens) and a huge file are refused at once.
func TestReadConfigFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "users")
	if err := os.WriteFile(ok, []byte("prom:$2a$04$x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxConfigFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := readConfigFile(ok); err != nil || len(b) != 14 {
		t.Errorf("regular file: %d bytes, %v", len(b), err)
	}
	for path, want := range map[string]string{"/dev/zero": "not a regular file", fifo: "not a regular file", big: "larger than"} {
		done := make(chan error, 1)
		go func() { _, err := readConfigFile(path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still reading after 5 s", path)
		}
	}
}
