package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/render"
)

func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), code
}

func TestUnknownCommandIsUsageError(t *testing.T) {
	_, stderr, code := runCmd(t, "frobnicate")
	if code != cmdutil.ExitUsage {
		t.Fatalf("exit code %d, want %d", code, cmdutil.ExitUsage)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rdmactl: ") {
		t.Fatalf("want one line on stderr, got %q", stderr)
	}
}

// A bare "dev" is "dev show", as in rdma (internal/rdmagrammar).
func TestBareDevIsDevShow(t *testing.T) {
	out1, err1, code1 := runCmd(t, "dev")
	out2, err2, code2 := runCmd(t, "dev", "show")
	if out1 != out2 || err1 != err2 || code1 != code2 {
		t.Fatalf("dev: %d %q %q; dev show: %d %q %q", code1, out1, err1, code2, out2, err2)
	}
}

func TestTableRendering(t *testing.T) {
	var b bytes.Buffer
	tb := render.NewTable(&b, "DEV", "PORT", "STATE")
	tb.Row("rxe0", 1, "ACTIVE")
	tb.Row("rxe1", 1, "")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	if !strings.HasPrefix(lines[0], "DEV") || !strings.Contains(lines[2], "-") {
		t.Fatalf("unexpected table:\n%s", b.String())
	}
}
