package perf

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// -X: a vector the device has is taken; one it lacks is its lack
// (verbs.ErrUnsupported: exit 5), naming -X and the device's range.
func TestCompVector(t *testing.T) {
	if err := checkCompVector(1, 2, "rxe0"); err != nil {
		t.Fatal(err)
	}
	err := checkCompVector(2, 2, "rxe0")
	if !errors.Is(err, verbs.ErrUnsupported) || !strings.HasPrefix(err.Error(), "-X 2: rxe0 has 2 completion vectors (0..1)") {
		t.Fatalf("%v", err)
	}
	// The header says where the events go, as perftest's.
	p := Params{Verb: VerbSend, Test: TestBW, Iters: 50, UseEvent: true, CompVector: 1}
	s, c, _ := runPair(t, p, p)
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	if !strings.Contains(c.out.String(), "                    Send BW Test\n Test with events. Using _comp1\n Dual-port") {
		t.Fatalf("header:\n%s", c.out.String())
	}
	for _, bad := range []Params{{Verb: VerbSend, Test: TestBW, CompVector: 1}, {Verb: VerbSend, Test: TestBW, UseEvent: true, CompVector: 5000}} {
		bad.Server = true
		bad.Defaults()
		if err := bad.Validate(); err == nil || !strings.HasPrefix(err.Error(), "-X") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
