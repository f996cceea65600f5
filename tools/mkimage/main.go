// Command mkimage builds rdmactl's container image, for amd64 and arm64
// in one index, as an OCI archive, without a container daemon: a layer
// with the static binary and a passwd file naming the non-root user, a
// config that runs rdmactl as that user, OCI labels. Every time in it is
// SOURCE_DATE_EPOCH's, so two builds of a commit are identical.
//
//	mkimage -out dist/rdmactl_VERSION_oci.tar -name REPOSITORY -version V \
//	        -revision SHA -bin amd64=PATH -bin arm64=PATH
//
// The index is named twice in the archive's index.json: its tag, V, as
// org.opencontainers.image.ref.name (the image-spec's annotation for a
// layout's references, which skopeo's oci-archive:FILE:V reads), and
// REPOSITORY:V as io.containerd.image.name (containerd's images package:
// the Name an import gives the image), so that 'ctr -n k8s.io images
// import' on a node without a registry loads it under the name a
// manifest pulls.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: not root, as distroless's nonroot (65532). The
// exporter and the inspection commands run as it; perf and the writes
// need what a pod or docker run grants (README, "Container image").
const (
	uid      = 65532
	userName = "nonroot"
)

type binFlag map[string]string

func (b binFlag) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binFlag) Set(s string) error {
	arch, path, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("want ARCH=PATH")
	}
	b[arch] = path
	return nil
}

func main() {
	bins := binFlag{}
	out := flag.String("out", "", "the OCI archive to write")
	name := flag.String("name", "", "the image's repository (REGISTRY/PATH, without the tag)")
	version := flag.String("version", "", "the image's version (its tag)")
	revision := flag.String("revision", "", "the commit")
	source := flag.String("source", "https://github.com/rdmactl/rdmactl", "the source's address")
	flag.Var(bins, "bin", "ARCH=PATH of the static binary (repeat)")
	flag.Parse()
	if *out == "" || *name == "" || *version == "" || len(bins) == 0 {
		fmt.Fprintln(os.Stderr, "mkimage: want -out, -name, -version and -bin")
		os.Exit(2)
	}
	if err := run(*out, *name, *version, *revision, *source, bins); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(out, name, version, revision, source string, bins map[string]string) error {
	epoch, err := strconv.ParseInt(os.Getenv("SOURCE_DATE_EPOCH"), 10, 64)
	if err != nil {
		return fmt.Errorf("SOURCE_DATE_EPOCH: %v", err)
	}
	created := time.Unix(epoch, 0).UTC()
	labels := map[string]string{
		"org.opencontainers.image.title":       "rdmactl",
		"org.opencontainers.image.description": "Inspect RDMA devices and benchmark RDMA fabrics, without libibverbs",
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.revision":    revision,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	dir, err := os.MkdirTemp("", "mkimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	// The index, written here rather than by mutate.AppendManifests,
	// which gives each image's entry the OPTIONAL artifactType of
	// image-spec v1.1 (descriptor.md): a skopeo older than that field
	// (Debian 12's 1.9) drops it when it copies the index, so the index's
	// digest would change on the way to a registry, and with
	// --preserve-digests (scripts/push-image.sh) the copy fails.
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	arches := make([]string, 0, len(bins))
	for a := range bins {
		arches = append(arches, a)
	}
	sort.Strings(arches)
	for _, arch := range arches {
		bin, err := os.ReadFile(bins[arch])
		if err != nil {
			return err
		}
		layerTar, err := rootfs(bin, created)
		if err != nil {
			return err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(layerTar)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return err
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: created},
			CreatedBy: "tools/mkimage: /usr/bin/rdmactl, /etc/passwd, /etc/group"}})
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.Architecture, cf.OS = arch, "linux"
		cf.Created = v1.Time{Time: created}
		cf.Config.Entrypoint = []string{"/usr/bin/rdmactl"}
		cf.Config.Cmd = []string{"--help"}
		cf.Config.User = fmt.Sprintf("%d:%d", uid, uid)
		cf.Config.WorkingDir = "/"
		cf.Config.Env = []string{"PATH=/usr/bin"}
		cf.Config.Labels = labels
		cf.Config.ExposedPorts = map[string]struct{}{"9879/tcp": {}}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
			return err
		}
		if err := p.WriteImage(img); err != nil {
			return err
		}
		desc, err := partial.Descriptor(img)
		if err != nil {
			return err
		}
		idx.Manifests = append(idx.Manifests, v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest,
			Platform: &v1.Platform{OS: "linux", Architecture: arch}})
	}
	raw, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	h, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(raw))); err != nil {
		return err
	}
	if err := p.AppendDescriptor(v1.Descriptor{MediaType: types.OCIImageIndex, Size: size, Digest: h,
		Annotations: map[string]string{
			"org.opencontainers.image.ref.name": version,
			"io.containerd.image.name":          name + ":" + version,
		}}); err != nil {
		return err
	}
	return tarDir(dir, out, created)
}

// rootfs is the layer: the binary, and the user it runs as.
func rootfs(bin []byte, mtime time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dirs := []string{"etc/", "tmp/", "usr/", "usr/bin/"}
	for _, d := range dirs {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"etc/group", 0o644, []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid))},
		{"etc/passwd", 0o644, []byte(fmt.Sprintf("root:x:0:0:root:/:/sbin/nologin\n%s:x:%d:%d:%s:/:/sbin/nologin\n", userName, uid, uid, userName))},
		{"usr/bin/rdmactl", 0o755, bin},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data)),
			ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// tarDir writes the OCI layout dir as an archive: entries sorted,
// root-owned, at mtime, so that it is byte-identical across builds.
func tarDir(dir, out string, mtime time.Time) error {
	var paths []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: mtime, Mode: 0o644, Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		} else {
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := tw.Write(b); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
