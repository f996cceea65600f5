//go:build package

// The package test installs the .deb that make package built on this
// machine, as root, and removes it again: make packagetest runs it, and
// .ci/run does (on a CI machine, which is there to be changed).

package scripts

import (
	"bytes"
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
	if out, err := exec.Command("systemd-analyze", "verify", "/lib/systemd/system/rdmactl-exporter.service").CombinedOutput(); err != nil {
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
// out with skopeo and unpacked with umoci: it runs as the non-root user,
// and its entrypoint, run in its own root (chroot for amd64, qemu-user for
// arm64), prints the --version the .deb's binary prints, and the same
// 'dev show' of a captured tree copied into that root.
func TestImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("run as root: it unpacks the image and chroots into it (make packagetest)")
	}
	dist, _ := filepath.Abs("../dist")
	archive := distFile(t, dist, "rdmactl_*_oci.tar")
	tag := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(archive), "rdmactl_"), "_oci.tar")
	work := t.TempDir()
	// The .deb's binary, the reference.
	debRoot := filepath.Join(work, "deb")
	sh(t, "dpkg-deb", "-x", distFile(t, dist, "rdmactl_*_amd64.deb"), debRoot)
	ref := filepath.Join(debRoot, "usr", "bin", "rdmactl")
	wantVersion := sh(t, ref, "--version")
	tree, _ := filepath.Abs("../internal/sysfs/testdata/rxe")
	wantShow := sh(t, ref, "--sysfs-root", tree, "dev", "show")
	for _, arch := range []string{"amd64", "arm64"} {
		layoutDir := filepath.Join(work, "oci-"+arch)
		sh(t, "skopeo", "--override-arch", arch, "copy", "-q", "oci-archive:"+archive+":"+tag, "oci:"+layoutDir+":"+tag)
		bundle := filepath.Join(work, "bundle-"+arch)
		sh(t, "umoci", "unpack", "--rootless", "--image", layoutDir+":"+tag, bundle)
		cfg, err := os.ReadFile(filepath.Join(bundle, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(cfg), `"uid": 65532`) && !strings.Contains(string(cfg), `"uid":65532`) {
			t.Errorf("%s: the image does not run as the non-root user 65532", arch)
		}
		root := filepath.Join(bundle, "rootfs")
		sh(t, "cp", "-a", tree, filepath.Join(root, "tmp", "rxe"))
		run := func(args ...string) string {
			if arch == "amd64" {
				return sh(t, "chroot", append([]string{root, "/usr/bin/rdmactl"}, args...)...)
			}
			for i, a := range args {
				if a == "/tmp/rxe" {
					args[i] = filepath.Join(root, "tmp", "rxe")
				}
			}
			return sh(t, "/usr/bin/qemu-aarch64-static", append([]string{filepath.Join(root, "usr", "bin", "rdmactl")}, args...)...)
		}
		want := strings.Replace(wantVersion, "linux/amd64", "linux/"+arch, 1)
		if got := run("--version"); got != want {
			t.Errorf("%s: --version\n%s\nthe .deb's:\n%s", arch, got, want)
		}
		if got := run("--sysfs-root", "/tmp/rxe", "dev", "show"); got != wantShow {
			t.Errorf("%s: dev show\n%s\nthe .deb's:\n%s", arch, got, wantShow)
		}
		if arch == "amd64" {
			// deploy/kubernetes runs this image: its command is there and
			// runs as the manifest's user.
			command, user := manifestCommand(t)
			sh(t, "chroot", "--userspec="+user+":"+user, root, command, "--version")
		}
	}
}

// manifestCommand is the exporter DaemonSet's command and user.
func manifestCommand(t *testing.T) (command, user string) {
	b, err := os.ReadFile("../deploy/kubernetes/rdmactl-exporter.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "command: [\""); ok {
			command, _, _ = strings.Cut(v, "\"")
		}
		if v, ok := strings.CutPrefix(l, "runAsUser: "); ok {
			user = v
		}
	}
	if command == "" || user == "" {
		t.Fatal("deploy/kubernetes/rdmactl-exporter.yaml: no command or runAsUser found")
	}
	return command, user
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
