package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs rdmactl's main instead of the tests when asked
// (RDMACTL_TEST_AS_MAIN=1): the signal tests start this binary as an
// rdmactl process and signal it.
func TestMain(m *testing.M) {
	if os.Getenv("RDMACTL_TEST_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestObserversEndOnSignals: the commands that watch until stopped (top
// -b, counters --watch, monitor --poll, exporter) end with status 0 and
// nothing on stderr but what they print anyway, on SIGINT and on SIGTERM:
// the signal is how they are meant to end (README "Exit codes").
func TestObserversEndOnSignals(t *testing.T) {
	for _, c := range []struct {
		args  []string
		ready func(line string) bool // the output line after which it watches
		port  string                 // or: a TCP port it serves on
	}{
		{args: []string{"top", "-b", "-i", "100ms"}, ready: func(l string) bool { return strings.HasPrefix(l, "rdmactl top") }},
		{args: []string{"counters", "--watch=100ms"}, ready: func(l string) bool { return strings.HasPrefix(l, "watching counters") }},
		{args: []string{"monitor", "--poll", "100ms"}},
		{args: []string{"exporter", "--web.listen-address", "127.0.0.1:19881"}, port: "127.0.0.1:19881"},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			name := strings.Join(c.args, " ") + "/" + sig.String()
			t.Run(name, func(t *testing.T) {
				cmd := exec.Command(os.Args[0], append([]string{"--sysfs-root", rxeTree}, c.args...)...)
				cmd.Env = append(os.Environ(), "RDMACTL_TEST_AS_MAIN=1", "NO_COLOR=1")
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer cmd.Process.Kill()
				ready := make(chan struct{})
				go func() {
					sc := bufio.NewScanner(stdout)
					once := false
					for sc.Scan() {
						if !once && (c.ready == nil || c.ready(sc.Text())) {
							once = true
							close(ready)
						}
					}
				}()
				switch {
				case c.port != "":
					if !until(10*time.Second, func() bool {
						conn, err := net.Dial("tcp", c.port)
						if err == nil {
							conn.Close()
						}
						return err == nil
					}) {
						t.Fatalf("not serving on %s: %s", c.port, stderr.String())
					}
				case c.ready == nil: // monitor says it watches on stderr
					if !until(10*time.Second, func() bool { return strings.Contains(stderr.String(), "Ctrl-C to stop") }) {
						t.Fatalf("no start line: %q", stderr.String())
					}
				default:
					select {
					case <-ready:
					case <-time.After(10 * time.Second):
						t.Fatalf("no first frame in 10 s: %q", stderr.String())
					}
				}
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					var xe *exec.ExitError
					if err != nil && errors.As(err, &xe) {
						t.Errorf("exit %d (%v) after %v, stderr %q; want 0", xe.ExitCode(), xe, sig, stderr.String())
					} else if err != nil {
						t.Error(err)
					}
					if strings.Contains(stderr.String(), "rdmactl: ") && !strings.Contains(stderr.String(), "Ctrl-C to stop") {
						t.Errorf("stderr %q", stderr.String())
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("still running 10 s after %v", sig)
				}
			})
		}
	}
}

// until polls cond every 20 ms for at most d.
func until(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
