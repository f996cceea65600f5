package mesh

import (
	"testing"
)

func uniform(n, d int) []int {
	devs := make([]int, n)
	for i := range devs {
		devs[i] = d
	}
	return devs
}

// check runs every round of p and returns how often each ordered test
// ran, failing if an endpoint is in two tests of one round or a test
// pairs a rank with itself.
func check(t *testing.T, p *Plan) map[Test]int {
	t.Helper()
	seen := map[Test]int{}
	var buf []Test
	for k := range p.Rounds() {
		buf = p.Round(k, buf[:0])
		busy := map[Endpoint]bool{}
		for _, ts := range buf {
			if ts.Src.Rank == ts.Dst.Rank {
				t.Fatalf("%+v round %d: %v pairs a rank with itself", p, k, ts)
			}
			for _, e := range []Endpoint{ts.Src, ts.Dst} {
				if busy[e] {
					t.Fatalf("%s %d ranks %v devices: round %d has endpoint %v twice", p.Pattern, p.Ranks, p.Devs, k, e)
				}
				busy[e] = true
			}
			seen[ts]++
		}
	}
	return seen
}

// TestAllPairsRanks: for 1 to 1,024 ranks of one device, every pair of
// ranks is tested exactly once, no rank is in two tests of a round, and
// there are N-1 rounds for an even N (N for an odd one). Not parallel:
// it is CPU-bound (20 s under qemu-user) and would starve the
// deadline-bound rendezvous and round tests.
func TestAllPairsRanks(t *testing.T) {
	var buf []Test
	for n := 1; n <= 1024; n++ {
		p, err := NewPlan(Plan{Pattern: AllPairs, Ranks: n, Devs: uniform(n, 1)})
		if err != nil {
			t.Fatal(err)
		}
		want := n - 1
		if n%2 == 1 {
			want = n
		}
		if n == 1 {
			want = 0
		}
		if p.Rounds() != want {
			t.Fatalf("%d ranks: %d rounds, want %d", n, p.Rounds(), want)
		}
		pairs := make([]bool, n*n)
		count := 0
		busy := make([]int, n)
		for k := range p.Rounds() {
			buf = p.Round(k, buf[:0])
			for _, ts := range buf {
				a, b := ts.Src.Rank, ts.Dst.Rank
				if busy[a] == k+1 || busy[b] == k+1 || a == b {
					t.Fatalf("%d ranks, round %d: %d-%d", n, k, a, b)
				}
				busy[a], busy[b] = k+1, k+1
				lo, hi := min(a, b), max(a, b)
				if pairs[lo*n+hi] {
					t.Fatalf("%d ranks: %d-%d twice", n, lo, hi)
				}
				pairs[lo*n+hi] = true
				count++
			}
		}
		if count != n*(n-1)/2 {
			t.Fatalf("%d ranks: %d pairs tested, want %d", n, count, n*(n-1)/2)
		}
	}
}

// TestAllPairsDevices: with 1 to 8 devices a rank (and ranks of
// different device counts), every device of a rank is tested with every
// device of every other rank exactly once, or with --rails with the same
// device only; both directions on request.
func TestAllPairsDevices(t *testing.T) {
	cases := [][]int{{3, 5}, {8, 1, 4}, {2, 2, 7, 7, 1}}
	for n := 1; n <= 9; n++ {
		for d := 1; d <= 8; d++ {
			cases = append(cases, uniform(n, d))
		}
	}
	// Larger jobs: up to 64 ranks of 8 NICs (512 endpoints, 130,816
	// pairs; 1,024 ranks of one device are in TestAllPairsRanks).
	if !testing.Short() {
		cases = append(cases, uniform(33, 8), uniform(64, 8), uniform(129, 2))
	}
	for _, devs := range cases {
		for _, rails := range []bool{false, true} {
			for _, both := range []bool{false, true} {
				p, err := NewPlan(Plan{Pattern: AllPairs, Ranks: len(devs), Devs: devs, Rails: rails, Both: both})
				if err != nil {
					t.Fatal(err)
				}
				seen := check(t, p)
				want := 0
				for a := range devs {
					for b := range devs {
						if a == b || !both && b < a {
							continue
						}
						for i := range devs[a] {
							for j := range devs[b] {
								if rails && i != j {
									continue
								}
								n := seen[Test{Endpoint{a, i}, Endpoint{b, j}}]
								if !both {
									n += seen[Test{Endpoint{b, j}, Endpoint{a, i}}]
								}
								if n != 1 {
									t.Fatalf("devices %v rails %v both %v: (%d,%d)-(%d,%d) tested %d times", devs, rails, both, a, i, b, j, n)
								}
								want++
							}
						}
					}
				}
				total := 0
				for _, c := range seen {
					total += c
				}
				if total != want {
					t.Fatalf("devices %v rails %v both %v: %d tests, want %d", devs, rails, both, total, want)
				}
			}
		}
	}
}

// TestOtherPatterns: ring tests r -> r+1 for every r; one-to-all tests
// --from with every other rank, one at a time; pairs is a perfect
// matching (one rank idle for an odd count), the same for a seed.
func TestOtherPatterns(t *testing.T) {
	for n := 2; n <= 33; n++ {
		p, _ := NewPlan(Plan{Pattern: Ring, Ranks: n, Devs: uniform(n, 1)})
		seen := check(t, p)
		for r := range n {
			if seen[Test{Endpoint{r, 0}, Endpoint{(r + 1) % n, 0}}] != 1 {
				t.Fatalf("ring of %d: %d -> %d not tested once (%v)", n, r, (r+1)%n, seen)
			}
		}
		if len(seen) != n || p.Rounds() > 3 {
			t.Fatalf("ring of %d: %d tests in %d rounds", n, len(seen), p.Rounds())
		}
		p, _ = NewPlan(Plan{Pattern: OneToAll, Ranks: n, Devs: uniform(n, 2), Rails: true, From: n / 2})
		seen = check(t, p)
		if len(seen) != 2*(n-1) || p.Rounds() != n-1 {
			t.Fatalf("one-to-all of %d: %d tests in %d rounds", n, len(seen), p.Rounds())
		}
		for ts := range seen {
			if ts.Src.Rank != n/2 {
				t.Fatalf("one-to-all from %d: %v", n/2, ts)
			}
		}
		p, _ = NewPlan(Plan{Pattern: Pairs, Ranks: n, Devs: uniform(n, 1), Seed: 7})
		seen = check(t, p)
		if len(seen) != n/2 || p.Rounds() != 1 {
			t.Fatalf("pairs of %d: %d tests in %d rounds", n, len(seen), p.Rounds())
		}
		q, _ := NewPlan(Plan{Pattern: Pairs, Ranks: n, Devs: uniform(n, 1), Seed: 7})
		if a, b := p.Round(0, nil), q.Round(0, nil); len(a) != len(b) || len(a) > 0 && a[0] != b[0] {
			t.Fatalf("pairs of %d: seed 7 gave %v then %v", n, a, b)
		}
	}
}

func TestPlanRefuses(t *testing.T) {
	for _, p := range []Plan{
		{Pattern: AllPairs, Ranks: 0},
		{Pattern: AllPairs, Ranks: 2, Devs: []int{1}},
		{Pattern: AllPairs, Ranks: 2, Devs: []int{1, 0}},
		{Pattern: OneToAll, Ranks: 2, Devs: []int{1, 1}, From: 2},
		{Pattern: "star", Ranks: 2, Devs: []int{1, 1}},
	} {
		if _, err := NewPlan(p); err == nil {
			t.Errorf("%+v: accepted", p)
		}
	}
}

// BenchmarkAllPairsRound is one round of 1,024 ranks of 8 devices.
func BenchmarkAllPairsRound(b *testing.B) {
	p, _ := NewPlan(Plan{Pattern: AllPairs, Ranks: 1024, Devs: uniform(1024, 8)})
	var buf []Test
	for i := 0; i < b.N; i++ {
		buf = p.Round(i%p.Rounds(), buf[:0])
	}
}
