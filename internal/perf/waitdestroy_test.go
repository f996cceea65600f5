package perf

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitWatch is an Out that, when the wait line is written, checks half a
// second later whether the device is still open.
type waitWatch struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	dev      *fakeDevice
	openLate chan bool
}

func (w *waitWatch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(b, []byte(" Waiting ")) {
		go func() {
			time.Sleep(500 * time.Millisecond)
			w.dev.f.mu.Lock()
			open := !w.dev.closed
			w.dev.f.mu.Unlock()
			w.openLate <- open
		}()
	}
	return w.buf.Write(b)
}

// --wait_destroy: after its report, the side says so and keeps its
// device open for the time given; then it releases everything.
func TestSessionWaitDestroy(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 100}
	cli := p
	cli.WaitDestroy = time.Second
	w := &waitWatch{openLate: make(chan bool, 1)}
	start := time.Now()
	s, c, f := runPairWith(t, p, cli, 0, func(_, cl *Session) {
		w.dev = cl.Dev.(*fakeDevice)
		cl.Out = w
	})
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	if time.Since(start) < time.Second {
		t.Fatalf("the pair ended after %v", time.Since(start))
	}
	if out := w.buf.String(); !strings.HasSuffix(out, resultLine+" Waiting 1 seconds before releasing resources...\n") {
		t.Fatalf("client output:\n%s", out)
	}
	if open := <-w.openLate; !open {
		t.Fatal("the device was closed during the wait")
	}
	if strings.Contains(s.out.String(), "releasing resources") {
		t.Fatalf("server waited too:\n%s", s.out.String())
	}
	if f.live != 0 {
		t.Fatalf("%d fake objects left", f.live)
	}
}
