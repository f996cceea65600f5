//go:build package

// The package test installs the .deb that make package built on this
// machine, as root, and removes it again: make packagetest runs it, and
// .ci/run does (on a CI machine, which is there to be changed).

package scripts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/dropin"
)

// sh runs a command and returns its output, failing the test on error.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C.UTF-8")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// distFile is the one file of dist/ that matches pattern.
func distFile(t *testing.T, dist, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dist, pattern))
	if len(m) != 1 {
		t.Fatalf("dist/%s: %d files (run make package first)", pattern, len(m))
	}
	return m[0]
}

// TestDebPackage: the .deb installs with apt, and then: rdmactl --version
// names this commit; the tools' names under /usr/lib/rdmactl/bin run it;
// man pages open; bash completes 'rdmactl li' to
// link; systemd-analyze verify accepts the exporter's unit; lintian has no
// error or warning; an edited conffile survives an upgrade to a newer
// build; apt-get purge leaves no file behind.
func TestDebPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("run as root: it installs and purges the package (make packagetest)")
	}
	if runtime.GOARCH != "amd64" {
		t.Fatalf("the test installs the amd64 package; this is %s", runtime.GOARCH)
	}
	dist, err := filepath.Abs("../dist")
	if err != nil {
		t.Fatal(err)
	}
	deb := distFile(t, dist, "rdmactl_*_amd64.deb")
	commit := strings.TrimSpace(sh(t, "git", "rev-parse", "HEAD"))

	// lintian, on both architectures' packages: nothing but what the
	// package's overrides explain.
	for _, d := range []string{deb, distFile(t, dist, "rdmactl_*_arm64.deb")} {
		out := sh(t, "lintian", "--tag-display-limit", "0", "--fail-on", "error,warning", d)
		if strings.TrimSpace(out) != "" {
			t.Logf("lintian %s:\n%s", filepath.Base(d), out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "E: ") || strings.HasPrefix(l, "W: ") {
				t.Errorf("lintian %s: %s", filepath.Base(d), l)
			}
		}
	}

	t.Cleanup(func() { exec.Command("apt-get", "purge", "-y", "-qq", "rdmactl").Run() })
	sh(t, "apt-get", "install", "-y", "-qq", "--no-install-recommends", deb)
	files := strings.Fields(sh(t, "dpkg", "-L", "rdmactl"))

	if v := sh(t, "/usr/bin/rdmactl", "--version"); !strings.Contains(v, commit) {
		t.Errorf("rdmactl --version: %q, want commit %s", v, commit)
	}
	// The tools' names, first in PATH, run rdmactl as those tools:
	// ibv_devices prints its table's header.
	for _, n := range dropin.Names() {
		if p, err := filepath.EvalSymlinks("/usr/lib/rdmactl/bin/" + n); err != nil || p != "/usr/bin/rdmactl" {
			t.Errorf("/usr/lib/rdmactl/bin/%s: %q, %v; want a link to /usr/bin/rdmactl", n, p, err)
		}
	}
	if out := sh(t, "bash", "-c", "PATH=/usr/lib/rdmactl/bin:$PATH ibv_devices"); !strings.HasPrefix(out, "    device          \t   node GUID\n") {
		t.Errorf("ibv_devices from /usr/lib/rdmactl/bin: %q", out)
	}
	for _, page := range []string{"rdmactl", "rdmactl-perf-write"} {
		if text := sh(t, "man", "-P", "cat", page); !strings.Contains(text, "NAME") {
			t.Errorf("man %s: %q", page, text[:min(len(text), 200)])
		}
	}
	// Bash's completion, as a shell with bash-completion would run it:
	// 'li' begins both link and links: for an ambiguous completion
	// Readline's TAB inserts what the candidates have in common (a second
	// TAB lists them), here link.
	words := strings.Fields(sh(t, "bash", "-c", `source /usr/share/bash-completion/bash_completion
source /usr/share/bash-completion/completions/rdmactl
COMP_WORDS=(rdmactl li); COMP_CWORD=1; COMP_LINE="rdmactl li"; COMP_POINT=${#COMP_LINE}
__start_rdmactl rdmactl li rdmactl
printf '%s\n' "${COMPREPLY[@]}"`))
	if common := commonPrefix(words); common != "link" || !slices.Contains(words, "link") {
		t.Errorf("bash completes 'rdmactl li' to %q (candidates %q), want link", common, words)
	}
	// verify can print a warning (an unknown key, say) and exit 0: no
	// output either.
	if out, err := exec.Command("systemd-analyze", "verify", "/lib/systemd/system/rdmactl-exporter.service").CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Installed, not enabled (is-enabled exits 1 for a disabled unit).
	if st, _ := exec.Command("systemctl", "is-enabled", "rdmactl-exporter.service").Output(); strings.TrimSpace(string(st)) != "disabled" {
		t.Errorf("rdmactl-exporter.service is %q after install, want disabled", st)
	}

	// An admin's edit of the conffile survives an upgrade to a newer build
	// of the same commit (a later time: a higher version).
	const conf = "/etc/default/rdmactl-exporter"
	edited := "# edited by the admin\nRDMACTL_EXPORTER_ARGS=\"--web.listen-address=:9999\"\n"
	if err := os.WriteFile(conf, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	newer := t.TempDir()
	epoch := strings.TrimSpace(sh(t, "git", "log", "-1", "--format=%ct"))
	var later int64
	fmt.Sscan(epoch, &later)
	build := exec.Command("./package.sh")
	build.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", later+60), "RDMACTL_DIST="+newer, "RDMACTL_PACKAGE_ARCHES=amd64", "RDMACTL_PACKAGERS=deb")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("package.sh for the upgrade: %v\n%s", err, out)
	}
	sh(t, "apt-get", "install", "-y", "-qq", "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
		distFile(t, newer, "rdmactl_*_amd64.deb"))
	if b, _ := os.ReadFile(conf); string(b) != edited {
		t.Errorf("%s after the upgrade: %q, want the admin's edit", conf, b)
	}

	sh(t, "apt-get", "purge", "-y", "-qq", "rdmactl")
	for _, f := range files {
		// dpkg -L lists directories too, shared with other packages (and
		// /lib, a link to /usr/lib): the files must be gone, and the
		// directories that are the package's own (named for it).
		st, err := os.Lstat(f)
		if err != nil {
			continue
		}
		dir := st.IsDir()
		if st.Mode()&os.ModeSymlink != 0 {
			if to, err := os.Stat(f); err == nil && to.IsDir() {
				dir = true
			}
		}
		if !dir || strings.Contains(f, "rdmactl") {
			t.Errorf("%s is still there after apt-get purge", f)
		}
	}
	if _, err := os.Stat(conf); err == nil {
		t.Errorf("%s is still there after apt-get purge", conf)
	}
}

// TestRPMMatchesDeb: the .rpm holds what the .deb holds, in each
// distribution's own places, per architecture.
func TestRPMMatchesDeb(t *testing.T) {
	dist, _ := filepath.Abs("../dist")
	for _, arch := range [][2]string{{"amd64", "x86_64"}, {"arm64", "aarch64"}} {
		deb := distFile(t, dist, "rdmactl_*_"+arch[0]+".deb")
		rpm := distFile(t, dist, "rdmactl-*."+arch[1]+".rpm")
		var debFiles []string
		for _, l := range strings.Split(sh(t, "dpkg-deb", "-c", deb), "\n") {
			f := strings.Fields(l)
			if len(f) < 6 || strings.HasPrefix(f[0], "d") {
				continue
			}
			debFiles = append(debFiles, strings.TrimPrefix(f[5], "."))
		}
		// Debian's places and Fedora's for the same file; Debian's
		// copyright, changelog and lintian overrides, and Fedora's license
		// file, have no counterpart.
		mapped := map[string]bool{}
		for _, f := range debFiles {
			switch {
			case strings.HasPrefix(f, "/usr/share/doc/rdmactl/"), strings.HasPrefix(f, "/usr/share/lintian/"):
				continue
			case f == "/lib/systemd/system/rdmactl-exporter.service":
				f = "/usr/lib/systemd/system/rdmactl-exporter.service"
			case f == "/etc/default/rdmactl-exporter":
				f = "/etc/sysconfig/rdmactl-exporter"
			case f == "/usr/share/zsh/vendor-completions/_rdmactl":
				f = "/usr/share/zsh/site-functions/_rdmactl"
			}
			mapped[f] = true
		}
		var want, got []string
		for f := range mapped {
			want = append(want, f)
		}
		for _, f := range strings.Fields(sh(t, "rpm", "-qlp", rpm)) {
			if f != "/usr/share/licenses/rdmactl/LICENSE" {
				got = append(got, f)
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(want, "\n") != strings.Join(got, "\n") {
			t.Errorf("%s: the rpm holds\n%s\nthe deb (in Fedora's places)\n%s", arch[0], strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if c := strings.TrimSpace(sh(t, "rpm", "-qcp", rpm)); c != "/etc/sysconfig/rdmactl-exporter" {
			t.Errorf("%s: rpm config files %q", arch[0], c)
		}
	}
}

// TestReproducible: a clean clone of this commit, packaged again, gives
// byte-identical packages: the same SHA256SUMS as dist/.
func TestReproducible(t *testing.T) {
	if st := sh(t, "git", "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Fatalf("the checkout has changes; commit them first (a clean clone has none):\n%s", st)
	}
	dist, _ := filepath.Abs("../dist")
	want, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatalf("%v (run make package first)", err)
	}
	clone := filepath.Join(t.TempDir(), "rdmactl")
	top := strings.TrimSpace(sh(t, "git", "rev-parse", "--show-toplevel"))
	sh(t, "git", "clone", "-q", "--no-local", top, clone)
	sh(t, "git", "-C", clone, "checkout", "-q", strings.TrimSpace(sh(t, "git", "rev-parse", "HEAD")))
	out := t.TempDir()
	build := exec.Command(filepath.Join(clone, "scripts", "package.sh"))
	build.Env = append(os.Environ(), "RDMACTL_DIST="+out)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("package.sh in a clean clone: %v\n%s", err, b)
	}
	got, _ := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if !bytes.Equal(got, want) {
		t.Errorf("a clean clone's SHA256SUMS:\n%s\ndist/SHA256SUMS:\n%s", got, want)
	}
}

// TestImage: the image of dist/, for each platform of its index, taken
// out with skopeo and unpacked with umoci: its configured entrypoint, run
// in its own root (chroot; for arm64 with qemu-user copied into it) as its
// configured user, prints the --version the .deb's binary prints, and the
// same 'dev show' of a captured tree copied into that root. The image is
// named as the release pushes it and as dist's manifests pull it, their
// commands are in it and run as their users, and the exporter's command
// line exports what the .deb's binary exports.
func TestImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("run as root: it unpacks the image and chroots into it (make packagetest)")
	}
	dist, _ := filepath.Abs("../dist")
	archive := distFile(t, dist, "rdmactl_*_oci.tar")
	tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "rdmactl_"), "_oci.tar")
	name := imageName(t, archive, tag)
	work := t.TempDir()

	// What the release pushes (scripts/push-image.sh, its copies printed),
	// and that skopeo copies the index as it is (the registry replaced by
	// a local layout): the digests a manifest pinned by digest would name.
	pushed := sh(t, "env", "SKOPEO=echo", "./push-image.sh", archive)
	if want := "copy --all --preserve-digests oci-archive:" + archive + ":" + tag + " docker://" + name + "\n"; !strings.HasPrefix(pushed, want) {
		t.Errorf("push-image.sh pushes\n%s\nwant first\n%s", pushed, want)
	}
	sh(t, "skopeo", "copy", "-q", "--all", "--preserve-digests", "oci-archive:"+archive+":"+tag, "oci:"+filepath.Join(work, "all")+":"+tag)

	// dist's manifests (the release's) run this image by its name.
	manifests := []manifest{readManifest(t, dist, "rdmactl-exporter.yaml"), readManifest(t, dist, "rdmactl-perf-mesh.yaml")}
	for _, m := range manifests {
		if m.image != name {
			t.Errorf("dist/%s: image %s, want %s (the image of %s)", m.file, m.image, name, filepath.Base(archive))
		}
	}

	// The .deb's binary, the reference.
	debRoot := filepath.Join(work, "deb")
	sh(t, "dpkg-deb", "-x", distFile(t, dist, "rdmactl_*_amd64.deb"), debRoot)
	ref := filepath.Join(debRoot, "usr", "bin", "rdmactl")
	wantVersion := sh(t, ref, "--version")
	tree, _ := filepath.Abs("../internal/sysfs/testdata/rxe")
	wantShow := sh(t, ref, "--sysfs-root", tree, "dev", "show")
	exporter := manifests[0]
	wantExport := stripTimings(sh(t, ref, append(append([]string{"--sysfs-root", tree}, exporter.args...), "--once")...))

	for _, arch := range []string{"amd64", "arm64"} {
		layoutDir := filepath.Join(work, "oci-"+arch)
		sh(t, "skopeo", "--override-arch", arch, "copy", "-q", "oci-archive:"+archive+":"+tag, "oci:"+layoutDir+":"+tag)
		cfg := imageConfig(t, layoutDir)
		if cfg.Architecture != arch || len(cfg.Config.Entrypoint) == 0 {
			t.Fatalf("%s: the image's config is for %q, entrypoint %q", arch, cfg.Architecture, cfg.Config.Entrypoint)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: the image runs as %q, want the non-root user 65532:65532", arch, cfg.Config.User)
		}
		bundle := filepath.Join(work, "bundle-"+arch)
		sh(t, "umoci", "unpack", "--rootless", "--image", layoutDir+":"+tag, bundle)
		root := filepath.Join(bundle, "rootfs")
		// The image's binary is the package's, byte for byte.
		debBin := filepath.Join(work, "deb-"+arch)
		sh(t, "dpkg-deb", "-x", distFile(t, dist, "rdmactl_*_"+arch+".deb"), debBin)
		img, err1 := os.ReadFile(filepath.Join(root, cfg.Config.Entrypoint[0]))
		pkg, err2 := os.ReadFile(filepath.Join(debBin, "usr", "bin", "rdmactl"))
		if err1 != nil || err2 != nil || !bytes.Equal(img, pkg) {
			t.Errorf("%s: the image's %s is not the .deb's /usr/bin/rdmactl (%v, %v)", arch, cfg.Config.Entrypoint[0], err1, err2)
		}
		sh(t, "cp", "-a", tree, filepath.Join(root, "tmp", "rxe"))
		var emulator []string
		if arch != runtime.GOARCH {
			// qemu-user-static is static: it runs inside the root.
			sh(t, "cp", "/usr/bin/qemu-aarch64-static", filepath.Join(root, ".qemu"))
			emulator = []string{"/.qemu"}
		}
		// run: a command in the image's root as user (uid:gid), with
		// the image's environment.
		run := func(user string, args ...string) string {
			t.Helper()
			cmd := exec.Command("chroot", append(append([]string{"--userspec=" + user, root}, emulator...), args...)...)
			cmd.Env = cfg.Config.Env
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Errorf("%s: %s in the image as %s: %v\n%s", arch, strings.Join(args, " "), user, err, errb.String())
			}
			return out.String()
		}
		entry := func(args ...string) string {
			return run(cfg.Config.User, append(slices.Clone(cfg.Config.Entrypoint), args...)...)
		}
		want := strings.Replace(wantVersion, "linux/amd64", "linux/"+arch, 1)
		if got := entry("--version"); got != want {
			t.Errorf("%s: --version\n%s\nthe .deb's:\n%s", arch, got, want)
		}
		if got := entry("--sysfs-root", "/tmp/rxe", "dev", "show"); got != wantShow {
			t.Errorf("%s: dev show\n%s\nthe .deb's:\n%s", arch, got, wantShow)
		}
		// The manifests' commands, as their pods run them.
		for _, m := range manifests {
			if got := run(m.user+":"+m.user, append(slices.Clone(m.command), "--version")...); got != want {
				t.Errorf("%s: dist/%s's command %q as user %s: --version %q, want %q", arch, m.file, m.command, m.user, got, want)
			}
		}
		got := stripTimings(run(exporter.user+":"+exporter.user, append(append(append(slices.Clone(exporter.command), "--sysfs-root", "/tmp/rxe"), exporter.args...), "--once")...))
		if got != wantExport {
			t.Errorf("%s: dist/%s's command line with --once exports\n%s\nthe .deb's binary:\n%s", arch, exporter.file, got, wantExport)
		}
	}
}

// imageName is the name tools/mkimage gave the archive's index
// (io.containerd.image.name), checked against its tag.
func imageName(t *testing.T, archive, tag string) string {
	t.Helper()
	var index v1Index
	if err := json.Unmarshal([]byte(sh(t, "tar", "-xOf", archive, "index.json")), &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s: index.json: %v, %d entries, want 1", archive, err, len(index.Manifests))
	}
	a := index.Manifests[0].Annotations
	name := a["io.containerd.image.name"]
	if a["org.opencontainers.image.ref.name"] != tag || !strings.HasSuffix(name, ":"+tag) {
		t.Fatalf("%s: index.json names %q, tag %q; want the tag %s", archive, name, a["org.opencontainers.image.ref.name"], tag)
	}
	return name
}

type v1Index struct {
	Manifests []struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"manifests"`
}

// imageConfig is the config of the one image in an OCI layout.
func imageConfig(t *testing.T, dir string) (cfg struct {
	Architecture string `json:"architecture"`
	Config       struct {
		Entrypoint []string `json:"Entrypoint"`
		User       string   `json:"User"`
		Env        []string `json:"Env"`
	} `json:"config"`
}) {
	t.Helper()
	blob := func(digest string, v any) {
		b, err := os.ReadFile(filepath.Join(dir, "blobs", strings.Replace(digest, ":", "/", 1)))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			t.Fatalf("%s: blob %s: %v", dir, digest, err)
		}
	}
	var index v1Index
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil || json.Unmarshal(b, &index) != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s/index.json: %v, want one manifest", dir, err)
	}
	var m struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
	}
	blob(index.Manifests[0].Digest, &m)
	blob(m.Config.Digest, &cfg)
	return cfg
}

// manifest is what TestImage runs of a Kubernetes manifest's container.
type manifest struct {
	file, image, user string
	command, args     []string
}

// readManifest reads a manifest of dist/ (its one container's image,
// command and args, written as JSON arrays, and its runAsUser).
func readManifest(t *testing.T, dist, file string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, file))
	if err != nil {
		t.Fatalf("%v (make package writes it from deploy/kubernetes)", err)
	}
	m := manifest{file: file}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		k, v, _ := strings.Cut(l, ": ")
		switch k {
		case "image":
			m.image = v
		case "command":
			err = errors.Join(err, json.Unmarshal([]byte(v), &m.command))
		case "args":
			err = errors.Join(err, json.Unmarshal([]byte(v), &m.args))
		case "runAsUser":
			m.user = v
		}
	}
	if err != nil || m.image == "" || len(m.command) == 0 || m.user == "" {
		t.Fatalf("dist/%s: image %q, command %q, runAsUser %q: %v", file, m.image, m.command, m.user, err)
	}
	return m
}

// stripTimings drops the values of the exporter's own timing metrics,
// which differ from run to run.
func stripTimings(exposition string) string {
	lines := strings.Split(exposition, "\n")
	for i, l := range lines {
		if n, _, ok := strings.Cut(l, " "); ok && strings.HasPrefix(n, "rdma_exporter_") && strings.HasSuffix(n, "_seconds") {
			lines[i] = n
		}
	}
	return strings.Join(lines, "\n")
}

// commonPrefix is the longest prefix every word has: what Readline
// inserts for an ambiguous completion.
func commonPrefix(words []string) string {
	if len(words) == 0 {
		return ""
	}
	p := words[0]
	for _, w := range words[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
