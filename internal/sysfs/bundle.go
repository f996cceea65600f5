package sysfs

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

const syscallNoFollow = syscall.O_NOFOLLOW

// A support bundle is a capture directory (Capture, plus what
// cmd/rdmactl adds under BundleMetaDir) packed as one .tar.gz, so that a
// bug report carries one file. ExtractBundle unpacks it for --sysfs-root.
// The archive holds directories, regular files and the relative symlinks
// Capture keeps (<dev>/device, device/driver), nothing else.

// BundleMetaDir is the directory of a capture that holds rdmactl's own
// files (versions, probes, the NLDEV dumps); readers of /sys never look
// there.
const BundleMetaDir = "rdmactl"

// IsBundleName reports whether name asks for a .tar.gz bundle.
func IsBundleName(name string) bool {
	return strings.HasSuffix(name, ".tar.gz") || strings.HasSuffix(name, ".tgz")
}

// WriteBundle packs the capture directory dir into file, which must not
// exist (it is never overwritten). Entries are sorted and carry no owner
// or time, so one capture gives the same bytes.
func WriteBundle(dir, file string) (err error) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &DestNotEmptyError{Dir: file}
		}
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(file)
		}
	}()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		h := &tar.Header{Name: rel, Mode: 0o644, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, rel+"/", 0o755
			return tw.WriteHeader(h)
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, t, 0o777
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(b))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			_, err = tw.Write(b)
			return err
		}
		return nil // nothing else is in a capture
	})
	if err != nil {
		return fmt.Errorf("bundle %s: %w", file, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

// BadBundleError: file is not a bundle rdmactl can read back.
type BadBundleError struct {
	File   string
	Reason string
}

func (e *BadBundleError) Error() string {
	return fmt.Sprintf("%s is not an rdmactl capture bundle: %s", e.File, e.Reason)
}

// ExtractBundle unpacks the .tar.gz bundle file into dst (an empty
// directory). It is untrusted input from another host: names must be
// relative and stay inside dst, symlinks must be relative and resolve
// inside dst, only directories, regular files and symlinks are accepted,
// and the totals are bounded like a capture (CaptureMaxFiles,
// CaptureMaxBytes).
func ExtractBundle(file, dst string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return &BadBundleError{file, "not gzip: " + err.Error()}
	}
	return extractTar(zr, file, dst)
}

// headerRoom is what an entry's headers may take of the uncompressed tar
// stream, on average over the entries so far: a header block, the
// content's padding, a long name. The files' contents are bounded by
// CaptureMaxBytes; this bounds the rest (PAX records, up to 1 MiB each,
// cost inflating and parsing but write nothing), plus one MiB to start.
const headerRoom = 4096

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// maxEntryName bounds an entry's name: sysfs paths are a few hundred
// bytes, and one longer than PATH_MAX fails in the kernel with a line as
// long as the name.
const maxEntryName = 1024

// shortName is an entry's name for a message: at most 80 bytes of it.
func shortName(n string) string {
	if len(n) > 80 {
		return n[:60] + "..." + n[len(n)-17:]
	}
	return n
}

func extractTar(r io.Reader, file, dst string) error {
	bad := func(format string, a ...any) error { return &BadBundleError{file, fmt.Sprintf(format, a...)} }
	dst, err := filepath.EvalSymlinks(dst)
	if err == nil {
		dst, err = filepath.Abs(dst)
	}
	if err != nil {
		return err
	}
	cr := &countingReader{r: r}
	tr := tar.NewReader(cr)
	var files int
	var bytes int64
	type link struct{ at, target string }
	var links []link
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bad("%v", err)
		}
		if cr.n-bytes > int64(files+1)*headerRoom+1<<20 {
			return bad("%d bytes of tar headers for %d entries: far more than the entries need", cr.n-bytes, files+1)
		}
		if len(h.Name) > maxEntryName || len(h.Linkname) > maxEntryName {
			return bad("entry %q: a name of more than %d bytes", shortName(h.Name), maxEntryName)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name == "" || path.IsAbs(name) || strings.Contains(name, "\\") || strings.ContainsRune(name, 0) ||
			path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return bad("entry %q leaves the bundle", h.Name)
		}
		if files++; files > CaptureMaxFiles {
			return bad("more than %d entries", CaptureMaxFiles)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return bad("entry %q: %v", shortName(h.Name), errors.Unwrap(err))
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return bad("entry %q: %v", shortName(h.Name), errors.Unwrap(err))
			}
		case tar.TypeReg:
			if bytes += h.Size; h.Size < 0 || bytes > CaptureMaxBytes {
				return bad("more than %d bytes", CaptureMaxBytes)
			}
			// No symlink exists in dst while files are written (they are
			// made after the last entry), so a parent cannot lead out:
			// no per-entry resolution of the parents, whose cost grew
			// with the square of the nesting depth. O_NOFOLLOW and
			// O_EXCL refuse anything already at the file's place.
			out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscallNoFollow, 0o644)
			if err != nil {
				return bad("entry %q: %v", shortName(h.Name), errors.Unwrap(err))
			}
			_, err = io.Copy(out, io.LimitReader(tr, h.Size))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return bad("entry %q: %v", shortName(h.Name), err)
			}
		case tar.TypeSymlink:
			t := h.Linkname
			if t == "" || path.IsAbs(t) || strings.ContainsRune(t, 0) ||
				!inside(dst, filepath.Join(filepath.Dir(p), filepath.FromSlash(t))) {
				return bad("symlink %q -> %q leaves the bundle", h.Name, t)
			}
			links = append(links, link{p, t})
		default:
			return bad("entry %q is neither a directory, a file nor a symlink", h.Name)
		}
	}
	if files == 0 {
		return bad("empty")
	}
	// A target that passes through another symlink could leave dst where
	// each alone stays inside: walk each target element by element and
	// refuse one that goes through a link of the bundle.
	isLink := map[string]bool{}
	for _, l := range links {
		isLink[l.at] = true
	}
	for _, l := range links {
		cur := filepath.Dir(l.at)
		parts := strings.Split(l.target, "/")
		for i, el := range parts {
			switch el {
			case "", ".":
				continue
			case "..":
				cur = filepath.Dir(cur)
			default:
				cur = filepath.Join(cur, el)
			}
			if !inside(dst, cur) || (isLink[cur] && i < len(parts)-1) {
				return bad("symlink %s -> %q leaves the bundle or goes through another symlink", l.at, l.target)
			}
		}
	}
	// Symlinks last, so that no file is written through one; nothing is
	// followed here.
	for _, l := range links {
		if err := os.Symlink(l.target, l.at); err != nil {
			return bad("symlink %s: %v", l.at, err)
		}
	}
	// A chain of symlinks can leave dst where each alone stays inside:
	// resolve every one (a dangling one leads nowhere and stays).
	for _, l := range links {
		if real, err := filepath.EvalSymlinks(l.at); err == nil && !inside(dst, real) {
			return bad("symlink %s leads out of the bundle", l.at)
		}
	}
	return nil
}
