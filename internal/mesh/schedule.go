package mesh

import (
	"fmt"
	"math/rand/v2"
)

// Endpoint is one device of one rank (Dev indexes the rank's devices).
type Endpoint struct {
	Rank int `json:"rank"`
	Dev  int `json:"dev"`
}

// Test is one measurement: Src sends to Dst.
type Test struct {
	Src Endpoint `json:"src"`
	Dst Endpoint `json:"dst"`
}

// Pattern is which pairs of ranks a schedule tests.
type Pattern string

const (
	// AllPairs tests every pair of ranks once (a round-robin tournament:
	// each round pairs every rank with at most one other).
	AllPairs Pattern = "all-pairs"
	// Ring tests each rank with the next (rank N-1 with rank 0).
	Ring Pattern = "ring"
	// OneToAll tests one rank (From) with every other, one at a time.
	OneToAll Pattern = "one-to-all"
	// Pairs tests one random perfect matching of the ranks (Seed): a
	// bisection, every rank busy at once.
	Pairs Pattern = "pairs"
)

// Plan is a schedule: rounds of tests in which no endpoint is in two
// tests. Round(k) computes round k when asked: at 1,024 ranks of 8
// devices every device pair is 33 million tests, which nobody holds.
type Plan struct {
	Pattern Pattern
	Ranks   int
	Devs    []int // devices of each rank (len Ranks)
	// Rails pairs device i only with device i of the other rank
	// (rail-optimized fabrics); otherwise every device with every device.
	Rails bool
	// Both tests each direction: every round is followed by its reverse.
	Both bool
	From int    // OneToAll's rank
	Seed uint64 // Pairs' matching

	perm []int // Pairs: the ranks shuffled
	maxD int
}

// NewPlan checks p and returns it ready for Round.
func NewPlan(p Plan) (*Plan, error) {
	if p.Ranks < 1 || p.Ranks > MaxHosts {
		return nil, fmt.Errorf("%d ranks: want 1 to %d", p.Ranks, MaxHosts)
	}
	if len(p.Devs) != p.Ranks {
		return nil, fmt.Errorf("device counts for %d ranks, want %d", len(p.Devs), p.Ranks)
	}
	for r, d := range p.Devs {
		if d < 1 {
			return nil, fmt.Errorf("rank %d has no device to test", r)
		}
		p.maxD = max(p.maxD, d)
	}
	switch p.Pattern {
	case AllPairs, Ring:
	case OneToAll:
		if p.From < 0 || p.From >= p.Ranks {
			return nil, fmt.Errorf("one-to-all --from %d: want a rank from 0 to %d", p.From, p.Ranks-1)
		}
	case Pairs:
		p.perm = rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)).Perm(p.Ranks)
	default:
		return nil, fmt.Errorf("pattern %q: want all-pairs, ring, one-to-all or pairs", p.Pattern)
	}
	return &p, nil
}

// hostRounds is how many rounds of rank pairs the pattern has.
func (p *Plan) hostRounds() int {
	n := p.Ranks
	if n < 2 {
		return 0
	}
	switch p.Pattern {
	case AllPairs:
		if n%2 == 0 {
			return n - 1
		}
		return n
	case Ring:
		if n == 2 {
			return 2 // 0->1 and 1->0
		}
		if n%2 == 0 {
			return 2
		}
		return 3
	case OneToAll:
		return n - 1
	}
	return 1 // Pairs
}

// sub is how many rounds of devices each round of ranks takes.
func (p *Plan) sub() int {
	if p.Rails {
		return 1
	}
	return p.maxD
}

// Rounds is the number of rounds.
func (p *Plan) Rounds() int {
	n := p.hostRounds() * p.sub()
	if p.Both {
		n *= 2
	}
	return n
}

// Round appends round k's tests to dst.
func (p *Plan) Round(k int, dst []Test) []Test {
	reverse := false
	if p.Both {
		k, reverse = k/2, k%2 == 1
	}
	h, s := k/p.sub(), k%p.sub()
	p.rankPairs(h, func(a, b int) {
		if reverse {
			a, b = b, a
		}
		da, db := p.Devs[a], p.Devs[b]
		switch {
		case p.Rails:
			for i := range min(da, db) {
				dst = append(dst, Test{Endpoint{a, i}, Endpoint{b, i}})
			}
		case da <= db:
			// Round s pairs a's device i with b's (i+s) mod db: over db
			// rounds every pair once, each device once a round.
			if s < db {
				for i := range da {
					dst = append(dst, Test{Endpoint{a, i}, Endpoint{b, (i + s) % db}})
				}
			}
		default:
			if s < da {
				for j := range db {
					dst = append(dst, Test{Endpoint{a, (j + s) % da}, Endpoint{b, j}})
				}
			}
		}
	})
	return dst
}

// rankPairs calls f for each pair (sender, receiver) of ranks in round h.
func (p *Plan) rankPairs(h int, f func(a, b int)) {
	n := p.Ranks
	switch p.Pattern {
	case AllPairs:
		// The circle method: rank m-1 stays, the others turn; with an odd
		// number of ranks a phantom m-1 gives each round's partner a rest.
		m := n + n%2
		pair := func(a, b int) {
			if a < n && b < n {
				// Alternate the direction so that each rank sends about
				// as often as it receives.
				if (a+b+h)%2 == 1 {
					a, b = b, a
				}
				f(a, b)
			}
		}
		pair(m-1, h)
		for i := 1; i < m/2; i++ {
			pair((h+i)%(m-1), (h-i+m-1)%(m-1))
		}
	case Ring:
		if n == 2 {
			f(h, 1-h)
			return
		}
		for r := 0; r < n; r++ {
			next := (r + 1) % n
			round := r % 2
			if n%2 == 1 && r == n-1 {
				round = 2
			}
			if round == h {
				f(r, next)
			}
		}
	case OneToAll:
		other := h
		if other >= p.From {
			other++
		}
		f(p.From, other)
	case Pairs:
		for i := 0; i+1 < n; i += 2 {
			f(p.perm[i], p.perm[i+1])
		}
	}
}
