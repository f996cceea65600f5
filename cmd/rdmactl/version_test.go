package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

func TestVersionCommand(t *testing.T) {
	out, stderr, code := runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(out, "rdmactl ") || !strings.Contains(out, "go:") {
		t.Fatalf("version: code %d out %q stderr %q", code, out, stderr)
	}
	out, _, code = runCmd(t, "-j", "version")
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("-j version: code %d, %v: %q", code, err, out)
	}
	for _, k := range []string{"version", "commit", "date", "go_version", "platform"} {
		if s, _ := v[k].(string); s == "" {
			t.Errorf("-j version: %q missing or empty in %s", k, out)
		}
	}
	if _, _, code := runCmd(t, "version", "extra"); code != cmdutil.ExitUsage {
		t.Errorf("version extra: code %d, want %d", code, cmdutil.ExitUsage)
	}
}

// TestReleaseConfig checks that the Makefile and goreleaser.yaml stamp the
// variables version.go declares and build what the README promises; a
// rename on either side would otherwise go unnoticed until a release.
// (goreleaser check validates the schema; this runs without goreleaser.)
func TestReleaseConfig(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gr := read("goreleaser.yaml")
	for _, v := range []string{"main.version=", "main.commit=", "main.date=", "runtime.godebugDefault=disablethp=1"} {
		// scripts/package.sh builds the packages' and the image's binary.
		for _, f := range []string{"Makefile", "goreleaser.yaml", "scripts/release-snapshot.sh", "scripts/package.sh"} {
			if !strings.Contains(read(f), "-X "+v) {
				t.Errorf("%s does not stamp %s", f, v)
			}
		}
	}
	// The archives' binary is the packages' (goreleaser v2.14 checked:
	// byte-identical for a tag): the same build flags, and at a tag the
	// version git describe gives scripts/package.sh, which is the tag.
	pkg := read("scripts/package.sh")
	for _, want := range []string{"- -trimpath\n      - -buildvcs=false\n", "-X main.version={{ if .IsSnapshot }}{{ .Version }}{{ else }}{{ .Tag }}{{ end }} "} {
		if !strings.Contains(gr, want) {
			t.Errorf("goreleaser.yaml lacks %q, which scripts/package.sh's build has", want)
		}
	}
	for _, want := range []string{"-trimpath -buildvcs=false", "version=$(git describe --tags --always --dirty"} {
		if !strings.Contains(pkg, want) {
			t.Errorf("scripts/package.sh lacks %q, which goreleaser.yaml's build assumes", want)
		}
	}
	// The packages and the image are make package's alone: a section of
	// goreleaser's own that builds a Linux package or an image
	// (goreleaser.com/customization) would make a second definition of
	// them, free to drift from packaging/nfpm.yaml and tools/mkimage.
	for _, section := range []string{"nfpms", "srpms", "snapcrafts", "flatpaks", "dockers", "dockers_v2", "docker_manifests", "kos"} {
		if regexp.MustCompile(`(?m)^` + section + `:`).MatchString(gr) {
			t.Errorf("goreleaser.yaml has a %s section: the packages and the image are scripts/package.sh's (its before hook)", section)
		}
	}
	for _, want := range []string{
		"version: 2", "main: ./cmd/rdmactl", "CGO_ENABLED=0", "- linux", "- amd64", "- arm64", "-trimpath",
		"src: README.md", "src: LICENSE", "src: completions/*", "src: man/*.1", "name_template: checksums.txt", "algorithm: sha256",
		// The packages and the image are make package's, published as is.
		"before:\n  hooks:\n    - env RDMACTL_DIST=dist-packages scripts/package.sh\n", "extra_files:\n    - glob: dist-packages/rdmactl*\n\nrelease:\n  extra_files:\n    - glob: dist-packages/rdmactl*",
	} {
		if !strings.Contains(gr, want) {
			t.Errorf("goreleaser.yaml lacks %q", want)
		}
	}
	if strings.Contains(gr, "\t") {
		t.Error("goreleaser.yaml contains a tab (YAML indents with spaces)")
	}
	// The sections the release depends on, in the types of goreleaser
	// v2.14's pkg/config (OSS): before.hooks are strings (a cmd/env map
	// is GoReleaser Pro's, and OSS goreleaser refuses it), a publisher's
	// cmd one string.
	var cfg struct {
		Before struct {
			Hooks []string `yaml:"hooks"`
		} `yaml:"before"`
		Publishers []struct {
			Name       string   `yaml:"name"`
			IDs        []string `yaml:"ids"`
			Cmd        string   `yaml:"cmd"`
			ExtraFiles []struct {
				Glob string `yaml:"glob"`
			} `yaml:"extra_files"`
		} `yaml:"publishers"`
	}
	if err := yaml.Unmarshal([]byte(gr), &cfg); err != nil || len(cfg.Before.Hooks) == 0 || len(cfg.Publishers) == 0 {
		t.Errorf("goreleaser.yaml: %v (%d before hooks, %d publishers)", err, len(cfg.Before.Hooks), len(cfg.Publishers))
	}
}

// TestNoDefaultGODEBUG: the builds set runtime.godebugDefault themselves
// (disablethp=1, TestReleaseConfig), which replaces what the go command
// would store there: the compatibility settings it derives when go.mod's go
// line is older than the toolchain. There must be none to lose; if there
// are, add them to the -X flags.
func TestNoDefaultGODEBUG(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.DefaultGODEBUG}}", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("the go command would default GODEBUG to %q, which the builds' -X runtime.godebugDefault=disablethp=1 drops: add it to that flag (Makefile, goreleaser.yaml, scripts/release-snapshot.sh)", s)
	}
}

// TestVersionFlag: --version (and -v), which people type first, print
// what 'rdmactl version' prints.
func TestVersionFlag(t *testing.T) {
	want, _, code := runCmd(t, "version")
	if code != 0 || !strings.HasPrefix(want, "rdmactl ") || !strings.Contains(want, "commit:") {
		t.Fatalf("version: exit %d, %q", code, want)
	}
	for _, f := range []string{"--version", "-v"} {
		if out, stderr, code := runCmd(t, f); code != 0 || out != want || stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", f, code, out, stderr, want)
		}
	}
}
