package mesh

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// meet runs a rendezvous of size ranks in this process, ranks in skip
// never coming, and returns the coordinator's roster and each rank's
// error.
func meet(t testing.TB, size int, skip map[int]bool, wait time.Duration) (*Roster, []error) {
	ln := listen(t)
	ctx := context.Background()
	deadline := time.Now().Add(wait)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := 1; r < size; r++ {
		if skip[r] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			roster, l, err := Join(ctx, ln.Addr().String(), Hello{Job: "j1", Rank: r, Size: size, Host: fmt.Sprintf("h%d", r),
				Devices: []string{"mlx5_0", "mlx5_1"}}, deadline)
			errs[r] = err
			if err == nil {
				if len(roster.Members) != size {
					errs[r] = fmt.Errorf("roster of %d", len(roster.Members))
				}
				l.Close()
			}
		}()
	}
	roster, links, err := Gather(ctx, ln, Hello{Job: "j1", Rank: 0, Size: size, Host: "h0"}, deadline)
	if err != nil {
		t.Fatal(err)
	}
	closeAll(links)
	wg.Wait()
	return roster, errs
}

// TestRendezvous: every rank comes and gets the roster, in rank order,
// with the address the coordinator saw it from.
func TestRendezvous(t *testing.T) {
	for _, size := range []int{1, 2, 5} {
		roster, errs := meet(t, size, nil, 10*time.Second)
		for r, err := range errs {
			if err != nil {
				t.Fatalf("%d ranks: rank %d: %v", size, r, err)
			}
		}
		for r, m := range roster.Members {
			if m.Rank != r || m.Absent != "" || r > 0 && (m.Addr != "127.0.0.1" || m.Host != fmt.Sprintf("h%d", r) || len(m.Devices) != 2) {
				t.Fatalf("%d ranks: member %d: %+v", size, r, m)
			}
		}
	}
}

// TestRendezvousAbsent: a rank that never comes is absent from the
// roster once the deadline passes, and the others go on.
func TestRendezvousAbsent(t *testing.T) {
	t.Parallel()
	start := time.Now()
	roster, errs := meet(t, 4, map[int]bool{2: true}, 5*time.Second)
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("took %v", d)
	}
	if a := roster.Absent(); len(a) != 1 || a[0] != 2 || !strings.Contains(roster.Members[2].Absent, "never came") {
		t.Fatalf("absent %v: %+v", a, roster.Members)
	}
	for _, r := range []int{1, 3} {
		if errs[r] != nil {
			t.Errorf("rank %d: %v", r, errs[r])
		}
	}
}

// TestRendezvousRefusals: another job's rank, a rank out of range, a
// rank that comes twice are refused (the rank is told why) and a peer
// that sends garbage is hung up on; none is in the roster and the job
// goes on. Rank 2
// comes only once the others were refused, so the job ends when all have
// come, not at a deadline a loaded host could miss.
func TestRendezvousRefusals(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	ctx := context.Background()
	deadline := time.Now().Add(3 * time.Minute)
	addr := ln.Addr().String()
	results := make(chan string, 8)
	join := func(name string, h Hello) {
		_, l, err := Join(ctx, addr, h, deadline)
		if err == nil {
			defer l.Close()
			results <- name + ": ok"
			return
		}
		results <- name + ": " + err.Error()
	}
	go join("rank 1 (a)", Hello{Job: "j", Rank: 1, Size: 3, Host: "a"})
	go join("rank 1 (b)", Hello{Job: "j", Rank: 1, Size: 3, Host: "b"})
	go join("other job", Hello{Job: "k", Rank: 2, Size: 3, Host: "k"})
	go join("rank 7", Hello{Job: "j", Rank: 7, Size: 3, Host: "7"})
	go join("size", Hello{Job: "j", Rank: 2, Size: 4, Host: "4"})
	garbage := make(chan string, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			garbage <- err.Error()
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "{\"proto\":1,\"bogus\":true}\n")
		var r Roster
		err = newLink(c).Recv(&r, deadline)
		garbage <- fmt.Sprint(r.Error, err)
	}()
	type gathered struct {
		roster *Roster
		links  []*Link
		err    error
	}
	done := make(chan gathered, 1)
	go func() {
		roster, links, err := Gather(ctx, ln, Hello{Job: "j", Rank: 0, Size: 3}, deadline)
		done <- gathered{roster, links, err}
	}()
	got := map[string]string{}
	for range 4 { // the refusals, the second of rank 1's hellos among them
		s := <-results
		name, msg, _ := strings.Cut(s, ": ")
		got[name] = msg
	}
	if g := <-garbage; g != "EOF" { // no roster: the coordinator hangs up
		t.Errorf("garbage: %q, want the connection closed", g)
	}
	go join("rank 2", Hello{Job: "j", Rank: 2, Size: 3, Host: "good"})
	g := <-done
	if g.err != nil {
		t.Fatal(g.err)
	}
	defer closeAll(g.links)
	for range 2 {
		s := <-results
		name, msg, _ := strings.Cut(s, ": ")
		got[name] = msg
	}
	// Whichever of rank 1's two hellos came first is taken.
	a, b := got["rank 1 (a)"], got["rank 1 (b)"]
	first := ""
	switch {
	case a == "ok" && strings.Contains(b, "came twice"):
		first = "a"
	case b == "ok" && strings.Contains(a, "came twice"):
		first = "b"
	default:
		t.Errorf("rank 1 twice: %q and %q, want one ok and one 'came twice'", a, b)
	}
	for name, want := range map[string]string{"other job": "another job",
		"rank 7": "want 1 to 2", "size": "4 ranks, the coordinator has 3"} {
		if !strings.Contains(got[name], want) {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	if got["rank 2"] != "ok" {
		t.Errorf("rank 2: %q", got["rank 2"])
	}
	m := g.roster.Members
	if len(g.roster.Absent()) != 0 || m[1].Host != first || m[2].Host != "good" {
		t.Errorf("roster %+v: want rank 1 from %q and rank 2 from \"good\"", m, first)
	}
}

// TestJoinNoCoordinator: nothing listening: Join says so at the
// deadline, with the refusal it saw rather than the last attempt's
// timeout.
func TestJoinNoCoordinator(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close()
	_, _, err := Join(context.Background(), addr, Hello{Job: "j", Rank: 1, Size: 2}, time.Now().Add(500*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "connection refused (is rank 0 running") {
		t.Fatalf("%v", err)
	}
}

// FuzzDecodeMessage: any line from a peer is a Hello or an error; never
// a panic.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"proto":1,"job":"j","rank":1,"size":2,"host":"h","addr":"","devices":["mlx5_0"]}` + "\n"))
	f.Add([]byte(`{"members":[{"proto":1,"rank":0,"size":1,"absent":"x"}]}`))
	f.Add([]byte(`{"rank":1}{"rank":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Hello
		_ = decodeMessage(b, &h)
		var r Roster
		if decodeMessage(b, &r) == nil {
			_ = r.check(len(r.Members))
		}
	})
}

// BenchmarkRendezvous1024 meets 1,024 ranks (goroutines over loopback)
// and reports the time and the memory all ranks allocated (each decodes
// the roster of every rank).
func BenchmarkRendezvous1024(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		roster, errs := meet(b, 1024, nil, time.Minute)
		for r, err := range errs {
			if err != nil {
				b.Fatalf("rank %d: %v", r, err)
			}
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/meet")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/1e6, "MB-alloc-all-ranks/meet")
		if len(roster.Absent()) != 0 {
			b.Fatal("absent ranks")
		}
	}
}

// TestRendezvous1024: 1,024 ranks meet (3.4 s on the host; 43 s under
// qemu-user on a loaded host, hence the generous deadline: rank 0 stops
// waiting as soon as all have come). Not parallel: its 2,048 goroutines
// decoding rosters starved the tests beside it for seconds under
// qemu-user, and those wait out deadlines of a few seconds.
func TestRendezvous1024(t *testing.T) {
	roster, errs := meet(t, 1024, nil, 3*time.Minute)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	if len(roster.Absent()) != 0 {
		t.Fatalf("absent %v", roster.Absent())
	}
}

// TestRendezvousUnfit: a rank whose host failed its health check joins,
// gets the roster with itself absent and the reason, and has no link to
// the rounds; the others are in.
func TestRendezvousUnfit(t *testing.T) {
	t.Parallel()
	ln := listen(t)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	type joined struct {
		roster *Roster
		link   *Link
		err    error
	}
	res := make(chan joined, 2)
	for r, unfit := range map[int]string{1: "", 2: "doctor: expect_rate rxe0/1: rate 10 Gb/s, 25 expected"} {
		go func() {
			roster, l, err := Join(ctx, ln.Addr().String(), Hello{Job: "j", Rank: r, Size: 3, Host: "h", Devices: []string{"d"}, Unfit: unfit}, deadline)
			res <- joined{roster, l, err}
		}()
	}
	roster, links, err := Gather(ctx, ln, Hello{Job: "j", Rank: 0, Size: 3, Host: "h0"}, deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(links)
	for range 2 {
		j := <-res
		if j.err != nil {
			t.Fatal(j.err)
		}
		defer j.link.Close()
		if m := j.roster.Members[2]; m.Absent != "left out: doctor: expect_rate rxe0/1: rate 10 Gb/s, 25 expected" {
			t.Errorf("the ranks' roster: rank 2 %+v", m)
		}
	}
	if links[1] == nil || links[2] != nil {
		t.Errorf("links %v: want rank 1's and not rank 2's", links)
	}
	if got := roster.Absent(); len(got) != 1 || got[0] != 2 {
		t.Errorf("absent %v, want [2]", got)
	}
}
