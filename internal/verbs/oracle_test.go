package verbs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The C oracles (testdata/layout/*.c, testdata/mlx5/golden.c) are built
// with $CC, gcc by default (as for cgo, CC may carry flags), and run
// through $RDMACTL_TEST_EXEC when it is set (a command and its arguments,
// as go test -exec takes). scripts/test-arm64.sh, which runs these tests
// for GOARCH=arm64 under qemu-user, sets CC="aarch64-linux-gnu-gcc -static"
// and RDMACTL_TEST_EXEC=qemu-aarch64-static, so that the Go layouts and
// encoders are compared with arm64 C, not with the host's.

// buildOracle compiles the C program src (relative to the package
// directory) with $CC and flags into the test's temporary directory.
func buildOracle(t *testing.T, src string, flags ...string) string {
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

// oracleCmd runs an oracle built by buildOracle.
func oracleCmd(bin string, args ...string) *exec.Cmd {
	if wrap := strings.Fields(os.Getenv("RDMACTL_TEST_EXEC")); len(wrap) > 0 {
		return exec.Command(wrap[0], append(append(wrap[1:len(wrap):len(wrap)], bin), args...)...)
	}
	return exec.Command(bin, args...)
}
