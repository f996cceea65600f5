//go:build vmtest

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// TestVMPerftestNames: run through the links 'rdmactl links' makes, each
// of perftest's eight tests prints what Debian's perftest (6.06) prints in
// the same role on the same devices: stdout and stderr apart, line for
// line, with what differs between any two runs masked (the address
// lines' QPN, PSN, RKey and VAddr; the result rows' figures; perftest's
// clock warnings), and exits as perftest does. Two runs a test: the name
// as server with perftest's client, then perftest's server with the name
// as client; each side under the name is compared with perftest's side
// in the same role of the other run.
func TestVMPerftestNames(t *testing.T) {
	resUnchanged(t, false)
	dir := toolLinks(t)
	// --mmap's file, which both sides map: perftest says so on stdout.
	const mmapFile = "/dev/shm/rdmactl-names-mmap"
	if err := os.WriteFile(mmapFile, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mmapFile)
	for i, c := range []struct {
		name string
		args []string
	}{
		{"ib_write_bw", []string{"-n", "200"}},
		{"ib_write_lat", []string{"-n", "200"}},
		{"ib_read_bw", []string{"-n", "200"}},
		{"ib_read_lat", []string{"-n", "200"}},
		{"ib_send_bw", []string{"-n", "200"}},
		{"ib_send_lat", []string{"-n", "200"}},
		{"ib_atomic_bw", []string{"-n", "200"}},
		{"ib_atomic_lat", []string{"-n", "200"}},
		{"ib_write_bw", []string{"-n", "200", "-s", "4096", "--report_gbits", "-F", "-l", "4"}},
		{"ib_send_bw", []string{"-n", "200", "-c", "UD", "-s", "1024"}},
		{"ib_write_bw", []string{"-n", "200", "--mmap=" + mmapFile}},
		{"ib_read_bw", []string{"-n", "200", "--disable_pcie_relaxed", "-m", "4096"}},
	} {
		t.Run(strings.Join(append([]string{c.name}, c.args...), "_"), func(t *testing.T) {
			port := 24000 + 20*i
			named := filepath.Join(dir, c.name)
			ns, pc := namedPair(t, port, named, c.name, c.args)
			ps, nc := namedPair(t, port+5, c.name, named, c.args)
			for _, s := range []struct {
				role string
				p, r sideRun
			}{{"server", ps, ns}, {"client", pc, nc}} {
				if s.p.code != s.r.code {
					t.Errorf("%s: perftest exit %d, rdmactl %d\nrdmactl stderr:\n%s", s.role, s.p.code, s.r.code, s.r.stderr)
				}
				if p, r := maskPerftest(s.p.stdout), maskPerftest(s.r.stdout); p != r {
					t.Errorf("%s stdout differs:\n%s", s.role, lineDiff(p, r))
				}
				if p, r := maskPerftest(dropClockLines(s.p.stderr)), maskPerftest(s.r.stderr); p != r {
					t.Errorf("%s stderr differs:\n%s", s.role, lineDiff(p, r))
				}
			}
		})
	}
}

// sideRun is how one side of a pair ended.
type sideRun struct {
	stdout, stderr string
	code           int
}

// namedPair runs server (a program: perftest's name from PATH, or a path
// to a link) on rxe0 and client on rxe1 with args, as perftest's own
// command lines, and returns what each printed. A run in which perftest's
// clock failed under TCG (perftestClockFailed) is tried again on the
// next port, up to three times.
func namedPair(t *testing.T, port int, server, client string, args []string) (s, c sideRun) {
	t.Helper()
	for attempt := 0; attempt < 3; attempt++ {
		p := fmt.Sprint(port + attempt)
		s, c = runNamedPair(t, port+attempt, append([]string{server, "-d", "rxe0", "-p", p}, args...), append(append([]string{client, "-d", "rxe1", "-p", p}, args...), perfServerIP))
		if !perftestClockFailed(s.stdout + s.stderr + c.stdout + c.stderr) {
			return s, c
		}
		t.Logf("attempt %d: stock perftest could not calibrate its clock under TCG; trying again", attempt+1)
	}
	return s, c
}

// runNamedPair runs sargs, then, once it listens on port (TCP's, or with
// -R the RDMA CM's), cargs, each with argv[0] the program's base name, as
// a shell runs it.
func runNamedPair(t *testing.T, port int, sargs, cargs []string) (s, c sideRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := func(argv []string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Args[0] = filepath.Base(argv[0])
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		return cmd, &o, &e
	}
	wait := func(cmd *exec.Cmd, o, e *bytes.Buffer) sideRun {
		err := cmd.Wait()
		r := sideRun{stdout: o.String(), stderr: e.String()}
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			r.code = xe.ExitCode()
		} else if err != nil {
			r.code, r.stderr = -1, fmt.Sprintf("%v: %v\n%s", cmd.Args, err, r.stderr) // runs on the server's goroutine: no t.Fatal
		}
		return r
	}
	scmd, so, se := start(sargs)
	done := make(chan struct{})
	go func() { s = wait(scmd, so, se); close(done) }()
	if slices.Contains(sargs, "-R") {
		// An RDMA CM server listens in the CM's port space, not TCP's.
		vmcheck.Until(20*time.Second, vmcheck.Closed(done), func() bool { return vmcheck.CMListening(t, port) })
	} else {
		awaitListen(port, 20*time.Second, done)
	}
	ccmd, co, ce := start(cargs)
	c = wait(ccmd, co, ce)
	<-done
	return s, c
}

var (
	hexRE    = regexp.MustCompile(`0x[0-9a-f]+`)
	figureRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	spaceRE  = regexp.MustCompile(`[ \t]+`)
)

// maskPerftest masks what two runs print differently: hex numbers (the
// address lines), and in the result rows (the lines after a " #bytes"
// header up to the separator) every figure, with the space around them,
// whose width follows the figures (%-7.2f pads 768.99 to one trailing
// space and 1234.56 to none).
func maskPerftest(s string) string {
	var b strings.Builder
	rows := false
	for _, l := range strings.SplitAfter(s, "\n") {
		switch {
		case strings.HasPrefix(l, " #bytes"):
			rows = true
		case strings.HasPrefix(l, "-----"):
			rows = false
		case rows:
			l = strings.TrimRight(spaceRE.ReplaceAllString(figureRE.ReplaceAllString(l, "N"), " "), " \n") + "\n"
		}
		b.WriteString(hexRE.ReplaceAllString(l, "0x#"))
	}
	return b.String()
}

// dropClockLines removes perftest's warnings about the CPU clock it
// times with (get_clock.c), which rdmactl, timing with the kernel's
// clock, never prints.
func dropClockLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "Conflicting CPU frequency values") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// lineDiff shows two texts' lines side by side where they differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		mark := " "
		if x != y {
			mark = "!"
		}
		fmt.Fprintf(&out, "%s perftest %q\n%s rdmactl  %q\n", mark, x, mark, y)
	}
	return out.String()
}
