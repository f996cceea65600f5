package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"github.com/rdmactl/rdmactl/internal/sysfs"
	"golang.org/x/sys/unix"
)

// Support bundles (docs/capture.md): CaptureBundle writes one, as a
// directory or a .tar.gz file; openCaptured reads either back.

// BundleInfo is rdmactl/bundle.json: who captured what, when. Nothing
// reads it back; it is for the people reading a bug report.
type BundleInfo struct {
	Format     int    `json:"format"` // 1
	CapturedAt string `json:"captured_at"`
	// Source is "live", or the capture this one was copied from.
	Source string `json:"source"`
	// Rdmactl is what 'rdmactl -j -d version' prints: version, build and
	// the kernel feature probes.
	Rdmactl       any    `json:"rdmactl"`
	KernelRelease string `json:"kernel_release,omitempty"`
	KernelVersion string `json:"kernel_version,omitempty"` // uname -v
	Machine       string `json:"machine,omitempty"`
	// NLDev is "nldev.json", or why the bundle has no NLDEV dump.
	NLDev    string   `json:"nldev"`
	Warnings []string `json:"warnings"`
}

// CaptureBundle writes a support bundle of the source to dst: a directory
// (new or empty), or, for a name ending in .tar.gz or .tgz, one file that
// must not exist. It holds the sysfs copy (Capture), the NLDEV dump (live:
// asked now; a capture: its own, if it has one) and rdmactl/bundle.json
// with rdmactl (the caller's version and probes).
func (s *Source) CaptureBundle(dst string, rdmactl any) error {
	if !sysfs.IsBundleName(dst) {
		return s.captureDir(dst, rdmactl)
	}
	if _, err := os.Lstat(dst); err == nil {
		return &DestNotEmptyError{Dir: dst}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".rdmactl-capture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := s.captureDir(tmp, rdmactl); err != nil {
		return err
	}
	return sysfs.WriteBundle(tmp, dst)
}

func (s *Source) captureDir(dir string, rdmactl any) error {
	if err := s.fs.Capture(dir); err != nil {
		return err
	}
	info := BundleInfo{Format: 1, CapturedAt: time.Now().UTC().Format(time.RFC3339), Source: "live",
		Rdmactl: rdmactl, Warnings: []string{}}
	dump := s.b.bundle(&info)
	if err := os.MkdirAll(filepath.Join(dir, sysfs.BundleMetaDir), 0o755); err != nil {
		return err
	}
	if dump != nil {
		if err := writeJSON(filepath.Join(dir, NLDumpFile), dump); err != nil {
			return err
		}
		info.NLDev = "nldev.json"
	}
	return writeJSON(filepath.Join(dir, sysfs.BundleMetaDir, "bundle.json"), info)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// BadBundleError: --sysfs-root names a file that is not a bundle.
type BadBundleError = sysfs.BadBundleError

// RootError is a --sysfs-root that names nothing rdmactl can open: a
// usage error, naming the path and why.
type RootError struct {
	Root string
	Err  error
}

func (e *RootError) Error() string { return fmt.Sprintf("--sysfs-root %s: %v", e.Root, e.Err) }
func (e *RootError) Unwrap() error { return e.Err }

// openCaptured is the captured source under root: a directory, or a
// bundle file unpacked into a temporary directory that Close removes.
func openCaptured(root string) (*Source, error) {
	st, err := os.Stat(root)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &RootError{Root: root, Err: err}
	}
	if st.IsDir() {
		return Captured(root), nil
	}
	tmp, err := os.MkdirTemp("", "rdmactl-bundle-")
	if err != nil {
		return nil, err
	}
	stop := removeOnSignal(tmp)
	err = sysfs.ExtractBundle(root, tmp)
	stop()
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("--sysfs-root: %w", err)
	}
	c := newCaptured(tmp)
	c.origin = root
	c.cleanup = func() {
		sysfs.ForgetCaptureRoot(tmp)
		os.RemoveAll(tmp)
	}
	return sourceOf(c), nil
}

// removeOnSignal removes dir if SIGINT, SIGTERM or SIGHUP arrives before
// stop is called, and then lets the signal end the process as it would
// have (a bundle's unpacking takes long enough to be interrupted: up to
// 256 MiB, and without this every ^C left an rdmactl-bundle-* behind).
// A signal the process was started ignoring (nohup's SIGHUP, SIGINT in
// a shell's background job) stays ignored: the unpacking goes on, as
// the caller asked.
func removeOnSignal(dir string) (stop func()) {
	sigs := make(chan os.Signal, 1)
	for _, s := range []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case sig := <-sigs:
			os.RemoveAll(dir)
			signal.Reset(sig) // every handler of it: the default action again
			_ = unix.Kill(os.Getpid(), sig.(unix.Signal))
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
	}
}
