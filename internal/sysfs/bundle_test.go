package sysfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// treeText lists a tree: files with contents, symlinks with targets.
func treeText(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			tg, _ := os.Readlink(p)
			b.WriteString(rel + " -> " + tg + "\n")
		case d.Type().IsRegular():
			c, _ := os.ReadFile(p)
			b.WriteString(rel + " = " + string(c) + "\n")
		default:
			b.WriteString(rel + "/\n")
		}
		return nil
	})
	return b.String()
}

func TestBundleRoundTrip(t *testing.T) {
	for _, tree := range []string{"testdata/mlx5", "testdata/rxe"} {
		cap := filepath.Join(t.TempDir(), "cap")
		if err := New(tree).Capture(cap); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "b.tar.gz")
		if err := WriteBundle(cap, file); err != nil {
			t.Fatal(err)
		}
		var ne *DestNotEmptyError
		if err := WriteBundle(cap, file); !errors.As(err, &ne) {
			t.Errorf("second WriteBundle to %s: %v, want DestNotEmptyError", file, err)
		}
		out := t.TempDir()
		if err := ExtractBundle(file, out); err != nil {
			t.Fatal(err)
		}
		if a, b := treeText(t, cap), treeText(t, out); a != b || a == "" {
			t.Errorf("%s: extracted tree differs from the capture", tree)
		}
		// One capture gives the same bytes.
		file2 := filepath.Join(t.TempDir(), "b.tar.gz")
		WriteBundle(cap, file2)
		b1, _ := os.ReadFile(file)
		b2, _ := os.ReadFile(file2)
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s: two bundles of one capture differ", tree)
		}
	}
}

type entry struct {
	name, link string
	typ        byte
	body       string
}

func tarGz(t testing.TB, es []entry) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644, Size: int64(len(e.body))}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// TestBundleHostile: a bundle comes from another host; nothing in it may
// write or point outside the directory it is unpacked into.
func TestBundleHostile(t *testing.T) {
	reg := byte(tar.TypeReg)
	sym := byte(tar.TypeSymlink)
	for name, es := range map[string][]entry{
		"dotdot":       {{name: "../evil", typ: reg, body: "x"}},
		"absolute":     {{name: "/tmp/evil", typ: reg, body: "x"}},
		"unclean":      {{name: "a/../../evil", typ: reg, body: "x"}},
		"symlink out":  {{name: "a", typ: sym, link: "../../etc"}},
		"symlink abs":  {{name: "a", typ: sym, link: "/etc"}},
		"symlink then": {{name: "a", typ: sym, link: "."}, {name: "a/b", typ: reg, body: "x"}, {name: "a", typ: reg}},
		"chain": {{name: "x/y/l2", typ: sym, link: "../.."}, {name: "l1", typ: sym, link: "x/y/l2/../../../x"},
			{name: "x/y/z", typ: reg}},
		"device":   {{name: "dev", typ: tar.TypeChar}},
		"hardlink": {{name: "f", typ: reg}, {name: "h", typ: tar.TypeLink, link: "f"}},
		"empty":    {},
	} {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		os.Mkdir(dst, 0o755)
		file := filepath.Join(t.TempDir(), "b.tar.gz")
		os.WriteFile(file, tarGz(t, es), 0o644)
		err := ExtractBundle(file, dst)
		var be *BadBundleError
		if !errors.As(err, &be) {
			t.Errorf("%s: %v, want a BadBundleError", name, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 1 {
			t.Errorf("%s: wrote beside the destination: %v", name, ents)
		}
	}
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	os.WriteFile(file, []byte("not gzip"), 0o644)
	if err := ExtractBundle(file, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not an rdmactl capture bundle") {
		t.Errorf("not gzip: %v", err)
	}
}

// FuzzExtractBundle: whatever the archive, extraction ends without a
// panic, writes nothing beside the destination, and leaves no symlink
// that resolves outside it.
func FuzzExtractBundle(f *testing.F) {
	f.Add(tarGz(f, []entry{{name: "class/infiniband/rxe0/fw_ver", typ: tar.TypeReg, body: "1\n"},
		{name: "class/infiniband/rxe0/device", typ: tar.TypeSymlink, link: "../../../devices/x"}}))
	f.Add(tarGz(f, []entry{{name: "../x", typ: tar.TypeReg}}))
	f.Add(tarGz(f, []entry{{name: "x/y/l2", typ: tar.TypeSymlink, link: "../.."}, {name: "l1", typ: tar.TypeSymlink, link: "x/y/l2/../../../x"}}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dst := filepath.Join(parent, "dst")
		os.Mkdir(dst, 0o755)
		file := filepath.Join(parent, "b.tar.gz")
		os.WriteFile(file, b, 0o644)
		ExtractBundle(file, dst)
		if ents, _ := os.ReadDir(parent); len(ents) != 2 {
			t.Fatalf("wrote beside the destination: %v", ents)
		}
		real, _ := filepath.EvalSymlinks(dst)
		filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type()&fs.ModeSymlink != 0 {
				if r, err := filepath.EvalSymlinks(p); err == nil && !inside(real, r) {
					t.Fatalf("%s resolves to %s, outside", p, r)
				}
			}
			return nil
		})
	})
}

// TestBundleBounds: what a bundle costs is bounded by its entries, and its
// refusals fit on a line. 200 files at nesting depths up to 200 unpack in
// well under a second (resolving each entry's parents took minutes); PAX
// headers of a MiB each are refused after a few entries; a name longer
// than PATH_MAX is refused in a short line.
func TestBundleBounds(t *testing.T) {
	var deep []entry
	dir := ""
	for i := range 200 {
		dir += "d/"
		deep = append(deep, entry{name: dir + "f" + strings.Repeat("x", i%7), typ: tar.TypeReg, body: "1\n"})
	}
	file := filepath.Join(t.TempDir(), "deep.tar.gz")
	os.WriteFile(file, tarGz(t, deep), 0o644)
	start := time.Now()
	if err := ExtractBundle(file, t.TempDir()); err != nil {
		t.Fatalf("deep: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("200 nested entries took %v", d)
	}

	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := range 64 {
		h := &tar.Header{Name: fmt.Sprintf("f%d", i), Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"comment": strings.Repeat("p", 1<<20-64)}}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	file = filepath.Join(t.TempDir(), "pax.tar.gz")
	os.WriteFile(file, buf.Bytes(), 0o644)
	err := ExtractBundle(file, t.TempDir())
	var be *BadBundleError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "tar headers") {
		t.Errorf("PAX records of 64 MiB for 64 empty files: %v", err)
	}

	long := strings.Repeat("n/", 2100) + "f"
	file = filepath.Join(t.TempDir(), "long.tar.gz")
	os.WriteFile(file, tarGz(t, []entry{{name: long, typ: tar.TypeReg, body: "x"}}), 0o644)
	err = ExtractBundle(file, t.TempDir())
	if !errors.As(err, &be) || len(err.Error()) > 300 {
		t.Errorf("a %d-byte name: %d-byte error %.120q", len(long), len(err.Error()), err)
	}
}
