package perf

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}}, {"0,2", []int{0, 2}}, {"0, 1, 2", []int{0, 1, 2}}, {"1-3", []int{1, 2, 3}}, {"0-1,5,6-7", []int{0, 1, 5, 6, 7}},
	} {
		set, err := parseCPUList(c.in, 8)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		var got []int
		for i := 0; i < 8; i++ {
			if set.IsSet(i) {
				got = append(got, i)
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("%q: %v, want %v", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%q: %v, want %v", c.in, got, c.want)
			}
		}
	}
	for _, bad := range []string{"", "x", "-1", "3-1", "8", "0-8", "1,,2", "0-"} {
		if _, err := parseCPUList(bad, 8); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// pinProcess pins every thread of the process (then the test restores
// the mask it found).
func TestPinProcess(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	first := -1
	for i := 0; i < 1024; i++ {
		if orig.IsSet(i) {
			first = i
			break
		}
	}
	var one unix.CPUSet
	one.Set(first)
	if err := pinProcess(one); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pinProcess(orig); err != nil {
			t.Fatal(err)
		}
	}()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil || len(ents) < 2 {
		t.Fatalf("%d threads: %v", len(ents), err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue // ended meanwhile
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != strconv.Itoa(first) {
				t.Errorf("thread %s: Cpus_allowed_list %q, want %d", e.Name(), strings.TrimSpace(v), first)
			}
		}
	}
}
