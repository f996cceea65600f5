package scripts

import (
	"archive/tar"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImageName: one name for the image, the one scripts/package.sh gives
// it (IMAGE): deploy/kubernetes's manifests pull IMAGE:latest, and the
// release pushes make package's archive (goreleaser.yaml's publisher,
// scripts/push-image.sh) as IMAGE:<version> and, for a vX.Y.Z release,
// IMAGE:latest. make packagetest's TestImage checks the archive's name and
// dist's manifests, which pin IMAGE:<version>.
func TestImageName(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile("../" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pkg := read("scripts/package.sh")
	m := regexp.MustCompile(`(?m)^IMAGE=(\S+)$`).FindStringSubmatch(pkg)
	if m == nil {
		t.Fatal("scripts/package.sh: no IMAGE=... line")
	}
	image := m[1]
	for _, want := range []string{`image=rdmactl_${version}_oci.tar`, `-name "$IMAGE" -version "$version"`} {
		if !strings.Contains(pkg, want) {
			t.Errorf("scripts/package.sh lacks %q", want)
		}
	}

	manifests, _ := filepath.Glob("../deploy/kubernetes/*.yaml")
	if len(manifests) == 0 {
		t.Fatal("no deploy/kubernetes/*.yaml")
	}
	for _, f := range manifests {
		lines := regexp.MustCompile(`(?m)^\s*image: (.*)$`).FindAllStringSubmatch(read(strings.TrimPrefix(f, "../")), -1)
		if len(lines) == 0 {
			t.Errorf("%s: no image", f)
		}
		for _, l := range lines {
			if l[1] != image+":latest" {
				t.Errorf("%s: image %s, want %s:latest (what the release pushes)", f, l[1], image)
			}
		}
	}

	if gr := read("goreleaser.yaml"); !strings.Contains(gr, "\npublishers:\n  - name: image\n") ||
		!strings.Contains(gr, "    extra_files:\n      - glob: dist-packages/rdmactl_*_oci.tar\n    cmd: scripts/push-image.sh {{ .ArtifactPath }}\n") {
		t.Error("goreleaser.yaml: no publisher running scripts/push-image.sh on dist-packages/rdmactl_*_oci.tar")
	}

	// push-image.sh, its copies printed, on archives named as mkimage
	// names them.
	for _, c := range []struct {
		tag  string
		tags []string
	}{
		{"v1.2.3", []string{"v1.2.3", "latest"}},
		{"v1.2.3-rc.1", []string{"v1.2.3-rc.1"}},
		{"v1.2.3-4-g0123abc", []string{"v1.2.3-4-g0123abc"}},
		{"0123abc", []string{"0123abc"}},
	} {
		archive := fakeArchive(t, image+":"+c.tag, c.tag)
		cmd := exec.Command("./push-image.sh", archive)
		cmd.Env = append(os.Environ(), "SKOPEO=echo")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("push-image.sh (%s): %v\n%s", c.tag, err, out)
		}
		var want []string
		for _, tg := range c.tags {
			want = append(want, "copy --all --preserve-digests oci-archive:"+archive+":"+c.tag+" docker://"+image+":"+tg)
		}
		if got := strings.Split(strings.TrimSpace(string(out)), "\n"); !slices.Equal(got, want) {
			t.Errorf("push-image.sh (%s):\n%s\nwant\n%s", c.tag, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// An archive whose name is not IMAGE:<its tag> is refused.
	cmd := exec.Command("./push-image.sh", fakeArchive(t, image+":v1.0.0", "v1.2.3"))
	cmd.Env = append(os.Environ(), "SKOPEO=echo")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("push-image.sh pushed an archive named %s:v1.0.0 with tag v1.2.3:\n%s", image, out)
	}
}

// fakeArchive is an OCI archive with only the index.json tools/mkimage
// writes (go-containerregistry's layout: indented JSON), naming an index
// name and tag.
func fakeArchive(t *testing.T, name, tag string) string {
	t.Helper()
	index, _ := json.MarshalIndent(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests": []any{map[string]any{
			"mediaType": "application/vnd.oci.image.index.v1+json",
			"size":      491,
			"digest":    "sha256:c4df8d1757da8344ab6be009095320cfd6da20a25f680f86f982aaf4df7335c3",
			"annotations": map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": tag,
			},
		}},
	}, "", "   ")
	p := filepath.Join(t.TempDir(), "rdmactl_"+tag+"_oci.tar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "index.json", Mode: 0o644, Size: int64(len(index))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(index)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}
