package web

import (
	"strings"
	"testing"

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
