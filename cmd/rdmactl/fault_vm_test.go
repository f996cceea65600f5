//go:build vmtest

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVMPerfLinkDownMidRun takes the client's netdev down in the middle
// of a perf run, for each loop kind: the fabric goes away under the data
// path. Both processes must end on their own within seconds, with a
// non-zero exit and one line on stderr, never a signal, and leave no RDMA
// resources behind once the link is back.
func TestVMPerfLinkDownMidRun(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	before := resShow(t)
	for i, args := range [][]string{
		{"write", "-D", "30"},
		{"write", "--lat", "-D", "30"},
		{"send", "--lat", "-D", "30"},
		{"read", "-D", "30"},
	} {
		name := strings.Join(args[:len(args)-2], "_")
		t.Run(name, func(t *testing.T) {
			port := []string{"-p", strconv.Itoa(18800 + i)}
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

// side is one rdmactl process of a perf pair.
type side struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// startSide starts bin with args; a test that ends before waiting for it
// kills it, so that no process outlives its test.
func startSide(t *testing.T, bin, name string, args []string) *side {
	t.Helper()
	sd := &side{name: name, cmd: exec.Command(bin, args...)}
	sd.cmd.Stdout, sd.cmd.Stderr = &sd.stdout, &sd.stderr
	if err := sd.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		if sd.cmd.ProcessState == nil {
			_ = sd.cmd.Process.Kill()
			_ = sd.cmd.Wait()
		}
	})
	return sd
}

// restoreLink brings netdev back up and waits until the RDMA device's
// port is ACTIVE again, so that later tests find the VM as it was.
func restoreLink(t *testing.T, netdev, ibdev string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", netdev, "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v %s", netdev, err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("rdma", "link", "show", ibdev+"/1").Output()
		if strings.Contains(string(out), "state ACTIVE") {
			return
		}
	}
	t.Fatalf("%s/1 not ACTIVE 30 s after %s came back up", ibdev, netdev)
}
