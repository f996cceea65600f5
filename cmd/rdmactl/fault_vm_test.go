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
			srv := exec.Command(bin, append(append([]string{"perf"}, args...), append(port, "-d", "rxe0")...)...)
			var sout, serr bytes.Buffer
			srv.Stdout, srv.Stderr = &sout, &serr
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			cli := exec.Command(bin, append(append([]string{"perf"}, args...), append(port, "-d", "rxe1", perfServerIP)...)...)
			var cout, cerr bytes.Buffer
			cli.Stdout, cli.Stderr = &cout, &cerr
			if err := cli.Start(); err != nil {
				_ = srv.Process.Kill()
				t.Fatal(err)
			}
			time.Sleep(3 * time.Second)
			if out, err := exec.Command("ip", "link", "set", "vrxe1", "down").CombinedOutput(); err != nil {
				t.Fatalf("ip link set vrxe1 down: %v %s", err, out)
			}
			down := time.Now()
			defer restoreLink(t, "vrxe1", "rxe1")
			for who, c := range map[string]*exec.Cmd{"client": cli, "server": srv} {
				errb := map[string]*bytes.Buffer{"client": &cerr, "server": &serr}[who]
				done := make(chan error, 1)
				go func() { done <- c.Wait() }()
				var err error
				select {
				case err = <-done:
				case <-time.After(60 * time.Second):
					_ = c.Process.Signal(syscall.SIGQUIT)
					<-done
					t.Fatalf("%s still running 60 s after the link went down:\n%s", who, errb.String())
				}
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("%s: exit %v after the link went down, want an error exit\nstdout:\n%s\nstderr:\n%s", who, err, map[string]*bytes.Buffer{"client": &cout, "server": &sout}[who], errb)
				}
				ws := ee.Sys().(syscall.WaitStatus)
				msg := strings.TrimSpace(errb.String())
				if ws.Signaled() || strings.Contains(msg, "panic") || strings.Contains(msg, "SIGSEGV") || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "rdmactl: ") {
					t.Fatalf("%s: %v after %v, want an exit with one line on stderr; stderr:\n%s", who, err, time.Since(down).Round(time.Millisecond), msg)
				}
				t.Logf("%s: exit %d after %v: %s", who, ws.ExitStatus(), time.Since(down).Round(time.Millisecond), msg)
			}
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
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
