//go:build vmtest

package rxe

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestVMAsyncPortEvents: a context's async events report rxe1's port
// going down and coming back (PORT_ERR, PORT_ACTIVE on port 1), on both
// the ioctl context (ASYNC_EVENT_ALLOC) and the write() one (GET_CONTEXT's
// async fd); Close ends a Read that waits.
func TestVMAsyncPortEvents(t *testing.T) {
	devs, err := providers.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var d verbs.Device
	for _, x := range devs {
		if x.Name == "rxe1" {
			d = x
		}
	}
	if d.Name == "" {
		t.Fatalf("no rxe1 in %+v", devs)
	}
	for _, force := range []bool{false, true} {
		c, err := verbs.OpenDevice(d, verbs.Options{ForceWrite: force})
		if err != nil {
			t.Fatalf("open rxe1 write=%v: %v", force, err)
		}
		ev, err := c.AsyncEvents()
		if err != nil {
			t.Fatalf("rxe1 write=%v: AsyncEvents: %v", force, err)
		}
		got := make(chan verbs.AsyncEvent, 8)
		done := make(chan error, 1)
		go func() {
			for {
				e, err := ev.Read()
				if err != nil {
					done <- err
					return
				}
				got <- e
			}
		}()
		// want waits for typ on port 1; other events (GID_CHANGE, say)
		// may come between and are logged.
		want := func(typ verbs.AsyncEventType) {
			t.Helper()
			timeout := time.After(20 * time.Second)
			for {
				select {
				case e := <-got:
					if e.Type == typ && e.Element == 1 {
						return
					}
					t.Logf("write=%v: %v element %d while waiting for %v", force, e.Type, e.Element, typ)
				case <-timeout:
					t.Fatalf("write=%v: no %v on port 1 within 20 s", force, typ)
				}
			}
		}
		link(t, "down")
		want(verbs.EventPortErr)
		link(t, "up")
		want(verbs.EventPortActive)
		if err := ev.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("write=%v: Read still waits after Close", force)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// link sets vrxe1 up or down; up waits until rxe1/1 is ACTIVE again.
func link(t *testing.T, how string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", "vrxe1", how).CombinedOutput(); err != nil {
		t.Fatalf("ip link set vrxe1 %s: %v %s", how, err, out)
	}
	if how != "up" {
		return
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if out, _ := exec.Command("rdma", "link", "show", "rxe1/1").Output(); strings.Contains(string(out), "state ACTIVE") {
			return
		}
	}
	t.Fatal("rxe1/1 not ACTIVE 30 s after vrxe1 came up")
}
