package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/testexec"
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
	addr := freeAddr(t)
	for _, c := range []struct {
		args  []string
		ready func(line string) bool // the output line after which it watches
		port  string                 // or: a TCP port it serves on
	}{
		{args: []string{"top", "-b", "-i", "100ms"}, ready: func(l string) bool { return strings.HasPrefix(l, "rdmactl top") }},
		{args: []string{"counters", "--watch=100ms"}, ready: func(l string) bool { return strings.HasPrefix(l, "watching counters") }},
		{args: []string{"monitor", "--poll", "100ms"}},
		{args: []string{"exporter", "--web.listen-address", addr}, port: addr},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			name := strings.Join(c.args, " ") + "/" + sig.String()
			t.Run(name, func(t *testing.T) {
				cmd := testexec.Self(append([]string{"--sysfs-root", rxeTree}, c.args...)...)
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

// TestBundleRemovedOnSignal: a signal while a bundle is being unpacked
// ends rdmactl as the signal does, and leaves no rdmactl-bundle-* in the
// temporary directory. A signal this test was started ignoring (run
// under nohup, or as a shell's background job), which rdmactl inherits,
// stays ignored: the run goes on and ends as usual, and leaves nothing.
func TestBundleRemovedOnSignal(t *testing.T) {
	tmp := t.TempDir()
	bundle := filepath.Join(t.TempDir(), "big.tar.gz")
	writeBigBundle(t, bundle, 200<<20)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		cmd := testexec.Self("--sysfs-root", bundle, "link", "show")
		cmd.Env = append(os.Environ(), "RDMACTL_TEST_AS_MAIN=1", "TMPDIR="+tmp)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		unpacking := func() bool {
			m, _ := filepath.Glob(filepath.Join(tmp, "rdmactl-bundle-*", "devices"))
			return len(m) > 0
		}
		if !until(20*time.Second, unpacking) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%v: the bundle was not being unpacked within 20 s", sig)
		}
		_ = cmd.Process.Signal(sig)
		err := cmd.Wait()
		var xe *exec.ExitError
		bySig := errors.As(err, &xe) && xe.Sys().(syscall.WaitStatus).Signal() == sig
		switch {
		case signal.Ignored(sig):
			// Inherited as ignored; under qemu-user (RDMACTL_TEST_EXEC)
			// the binary may not see it so, and then ends by it.
			if err != nil && !bySig {
				t.Errorf("%v (ignored since the start): ended with %v, want the run to go on and succeed", sig, err)
			}
		case !bySig:
			t.Errorf("%v: ended with %v, want the signal", sig, err)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "rdmactl-bundle-*")); len(left) > 0 {
			t.Errorf("%v: left %v", sig, left)
			for _, l := range left {
				os.RemoveAll(l)
			}
		}
	}
}

// writeBigBundle writes a capture bundle: the rxe tree and a file of n
// zero bytes, which takes a while to unpack.
func writeBigBundle(t *testing.T, path string, n int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.AddFS(os.DirFS(rxeTree)); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "devices/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Name: "devices/zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: n}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(tw, zeroReader{}, n); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestUnreadablePortsArePermission: a ports directory the user cannot
// read says "permission denied", exit 4, not "no RDMA port", exit 3. Run
// as root, the command runs as nobody (root reads everything).
func TestUnreadablePortsArePermission(t *testing.T) {
	dir, err := os.MkdirTemp("", "rdmactl-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.Chmod(filepath.Join(dir, "tree", "class", "infiniband", "rxe0", "ports"), 0o755)
		os.RemoveAll(dir)
	})
	tree := filepath.Join(dir, "tree")
	if err := os.CopyFS(tree, os.DirFS(rxeTree)); err != nil {
		t.Fatal(err)
	}
	// Readable by everyone, as a capture handed around is.
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			if d.IsDir() {
				os.Chmod(p, 0o755)
			} else {
				os.Chmod(p, 0o644)
			}
		}
		return nil
	})
	bin := filepath.Join(dir, "rdmactl")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(tree, "class", "infiniband", "rxe0", "ports"), 0); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"link", "show", "rxe0/1"}, {"gids", "rxe0/1"}} {
		cmd := testexec.Command(bin, append([]string{"--sysfs-root", tree}, args...)...)
		cmd.Env = append(os.Environ(), "RDMACTL_TEST_AS_MAIN=1")
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != cmdutil.ExitPermission || !strings.Contains(stderr.String(), "permission denied") ||
			strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: %v, stderr %q; want exit %d and one line saying permission denied", args, err, stderr.String(), cmdutil.ExitPermission)
		}
	}
}
