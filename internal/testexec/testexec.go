// Package testexec runs the programs tests start (a C oracle, or the test
// binary itself as a child) the way the tests' own binary is run.
//
// A test binary built for another architecture runs under an emulator:
// scripts/test-arm64.sh runs GOARCH=arm64 test binaries under qemu-user
// and sets $RDMACTL_TEST_EXEC to the emulator (a command and its
// arguments, as go test -exec takes). Without binfmt_misc, which a
// container often lacks, such a binary cannot exec another arm64 binary,
// itself included, so every program a test starts goes through that
// command too. $CC (gcc by default; as for cgo it may carry flags) builds
// the C oracles for the same architecture.
package testexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Command is exec.Command, through $RDMACTL_TEST_EXEC when it is set.
func Command(name string, args ...string) *exec.Cmd {
	name, args = wrap(name, args)
	return exec.Command(name, args...)
}

// CommandContext is exec.CommandContext, through $RDMACTL_TEST_EXEC when
// it is set.
func CommandContext(ctx context.Context, name string, args ...string) *exec.Cmd {
	name, args = wrap(name, args)
	return exec.CommandContext(ctx, name, args...)
}

// Self is Command of the running test binary.
func Self(args ...string) *exec.Cmd { return Command(os.Args[0], args...) }

func wrap(name string, args []string) (string, []string) {
	w := strings.Fields(os.Getenv("RDMACTL_TEST_EXEC"))
	if len(w) == 0 {
		return name, args
	}
	return w[0], append(append(w[1:], name), args...)
}

// BuildC compiles the C program src (relative to the package directory)
// with $CC and flags into the test's temporary directory and returns the
// binary's path; a missing compiler or a failed build fails the test.
func BuildC(t testing.TB, src string, flags ...string) string {
	t.Helper()
	cc := strings.Fields(os.Getenv("CC"))
	if len(cc) == 0 {
		cc = []string{"gcc"}
	}
	path, err := exec.LookPath(cc[0])
	if err != nil {
		t.Fatalf("%s is needed to build %s: %v", cc[0], src, err)
	}
	bin := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	args := append(append(cc[1:len(cc):len(cc)], flags...), "-o", bin, src)
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", strings.Join(cc, " "), src, err, out)
	}
	return bin
}

// RunIsolated runs fn in a child process (this test binary, re-executed
// for this test only, through $RDMACTL_TEST_EXEC when set) when a bug in
// the code under test could crash the process: the parent then reports a
// failure instead of dying with it.
func RunIsolated(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv("RDMACTL_ISOLATED_CHILD") == t.Name() {
		fn(t)
		return
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "RDMACTL_ISOLATED_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+parts0(t.Name())) {
		t.Fatalf("in a child process: %v\n%s", err, out)
	}
}

func parts0(name string) string { return strings.SplitN(name, "/", 2)[0] }

// LayoutFact is one line of a C layout oracle: a struct ("name"), a field
// ("struct.field") or a constant, with its offset and size (a constant's
// value in Size).
type LayoutFact struct {
	Name      string
	Off, Size uint64
	IsField   bool // Name has a '.': Off is the field's offset
}

// LayoutFacts builds the C program src (BuildC), runs it, and reads the
// "name offset size" lines it prints.
func LayoutFacts(t testing.TB, src string) []LayoutFact {
	t.Helper()
	out, err := Command(BuildC(t, src)).Output()
	if err != nil {
		t.Fatal(err)
	}
	var facts []LayoutFact
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("%s: bad line %q", src, l)
		}
		off, err1 := strconv.ParseUint(f[1], 10, 64)
		size, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: bad line %q", src, l)
		}
		facts = append(facts, LayoutFact{Name: f[0], Off: off, Size: size, IsField: strings.Contains(f[0], ".")})
	}
	return facts
}

// CheckStructs builds and runs the C program src, which prints
// "<struct> size <n>" and "<struct>.<field> <offset>" lines, and compares
// each with the Go mirror that types names for the C struct (fields
// matched by name without underscores or case: max_qp_rd_atom is
// MaxQPRdAtom). Every struct of types must be printed and every Go field
// checked, except the "<struct>.<GoField>" keys of goOnly (fields newer
// headers have; the struct's size still covers them).
func CheckStructs(t testing.TB, src string, types map[string]reflect.Type, goOnly map[string]bool) {
	t.Helper()
	out, err := Command(BuildC(t, src, "-Wall", "-Werror")).Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{} // structs, and "<struct>.<GoField>"
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		var name, key string
		var want uint64
		switch len(f) {
		case 3: // "<struct> size <n>"
			name, key = f[0], "size"
			want, err = strconv.ParseUint(f[2], 10, 64)
		case 2: // "<struct>.<field> <offset>"
			var ok bool
			if name, key, ok = strings.Cut(f[0], "."); !ok {
				t.Fatalf("%s: bad line %q", src, l)
			}
			want, err = strconv.ParseUint(f[1], 10, 64)
		default:
			t.Fatalf("%s: bad line %q", src, l)
		}
		if err != nil {
			t.Fatalf("%s: bad line %q", src, l)
		}
		typ, ok := types[name]
		if !ok {
			t.Errorf("%s prints struct %s, which the test does not map to Go", src, name)
			continue
		}
		seen[name] = true
		if key == "size" {
			if got := uint64(typ.Size()); got != want {
				t.Errorf("sizeof(%s) = %d, Go %s is %d", name, want, typ.Name(), got)
			}
			continue
		}
		sf, ok := fieldByCName(typ, key)
		if !ok {
			t.Errorf("%s.%s has no Go field in %s", name, key, typ.Name())
			continue
		}
		seen[name+"."+sf.Name] = true
		if uint64(sf.Offset) != want {
			t.Errorf("offsetof(%s, %s) = %d, Go %s.%s is at %d", name, key, want, typ.Name(), sf.Name, sf.Offset)
		}
	}
	for name, typ := range types {
		if !seen[name] {
			t.Errorf("%s does not print %s (Go %s)", src, name, typ.Name())
			continue
		}
		for i := 0; i < typ.NumField(); i++ {
			if k := name + "." + typ.Field(i).Name; !seen[k] && !goOnly[k] {
				t.Errorf("Go field %s.%s is not checked against C %s", typ.Name(), typ.Field(i).Name, name)
			}
		}
	}
}

func fieldByCName(typ reflect.Type, cname string) (reflect.StructField, bool) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	for i := 0; i < typ.NumField(); i++ {
		if norm(typ.Field(i).Name) == norm(cname) {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}
