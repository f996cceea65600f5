//go:build vmtest

package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVMPerfOpsLinkDownMidRun is TestVMPerfLinkDownMidRun for the loops
// of perf atomic and --use-srq: the client's netdev goes down mid-run;
// both processes end on their own with one line on stderr, never a
// signal, and rdma res show is as before once the link is back (the SRQ
// included).
func TestVMPerfOpsLinkDownMidRun(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	before := resShow(t)
	for i, args := range [][]string{
		{"atomic", "-D", "30"},
		{"atomic", "--lat", "-A", "CMP_AND_SWAP", "-D", "30"},
		{"send", "--use-srq", "-q", "2", "-D", "30"},
		{"send", "--lat", "--use-srq", "-D", "30"},
	} {
		name := strings.Join(args[:len(args)-2], "_")
		t.Run(name, func(t *testing.T) {
			port := []string{"-p", strconv.Itoa(19700 + i)}
			srv := startSide(t, bin, "server", append(append([]string{"perf"}, args...), append(port, "-d", "rxe0")...))
			time.Sleep(time.Second)
			cli := startSide(t, bin, "client", append(append([]string{"perf"}, args...), append(port, "-d", "rxe1", perfServerIP)...))
			time.Sleep(3 * time.Second)
			if out, err := exec.Command("ip", "link", "set", "vrxe1", "down").CombinedOutput(); err != nil {
				t.Fatalf("ip link set vrxe1 down: %v %s", err, out)
			}
			down := time.Now()
			defer restoreLink(t, "vrxe1", "rxe1")
			for _, sd := range []*side{cli, srv} {
				done := make(chan error, 1)
				go func() { done <- sd.cmd.Wait() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(60 * time.Second):
					_ = sd.cmd.Process.Signal(syscall.SIGQUIT)
					<-done
					t.Fatalf("%s still running 60 s after the link went down:\n%s", sd.name, &sd.stderr)
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("%s: exit %v after the link went down, want an error exit\nstdout:\n%s\nstderr:\n%s", sd.name, err, &sd.stdout, &sd.stderr)
				}
				ws := ee.Sys().(syscall.WaitStatus)
				msg := strings.TrimSpace(sd.stderr.String())
				if ws.Signaled() || strings.Contains(msg, "panic") || strings.Contains(msg, "SIGSEGV") || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "rdmactl: ") {
					t.Fatalf("%s: %v after %v, want an exit with one line on stderr; stderr:\n%s", sd.name, err, time.Since(down).Round(time.Millisecond), msg)
				}
				t.Logf("%s: exit %d after %v: %s", sd.name, ws.ExitStatus(), time.Since(down).Round(time.Millisecond), msg)
			}
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
