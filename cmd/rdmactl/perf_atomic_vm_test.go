//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/rdmactl/rdmactl/internal/perf"
)

// TestVMPerfAtomic: 'rdmactl perf atomic' against itself and against the
// VM's ib_atomic_bw / ib_atomic_lat in both roles, FETCH_AND_ADD and
// CMP_AND_SWAP. Byte-verified on the rdmactl side(s): a server reads its
// target words after the run (FETCH_AND_ADD of 1, n times from 0: their
// sum is n, also when a perftest client moves the address through its
// cycle buffer); a client reads the peer's word before and after the run
// (which a perftest server fills with random bytes) and the value its
// last atomic returned: +n and after-1, or (CMP_AND_SWAP of 0 with 0)
// all equal. Both print perftest's rows; rdma res show is unchanged
// afterwards.
func TestVMPerfAtomic(t *testing.T) {
	resUnchanged(t, false)
	const iters = 100
	port := 19300
	for _, kind := range []string{"bw", "lat"} {
		for _, op := range []string{"FETCH_AND_ADD", "CMP_AND_SWAP"} {
			for _, pr := range []struct{ name, server, client string }{
				{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"},
			} {
				port++
				p := port
				t.Run(fmt.Sprintf("%s_%s/%s", kind, op, pr.name), func(t *testing.T) {
					r := retryPair(t, p, 1000, func(port int) ([]string, []string) {
						return atomicArgs(kind, op, pr.server, port, iters, false), atomicArgs(kind, op, pr.client, port, iters, true)
					}, pairOpts{}, perftestClock)
					r.mustPass(t)
					sout, cout := r.sout, r.cout
					var wantTarget uint64
					if op == "FETCH_AND_ADD" {
						wantTarget = iters
					}
					for i, who := range []string{pr.server, pr.client} {
						out := []string{sout, cout}[i]
						if who == "p" {
							// perftest's table: the client's row (lat: only
							// the client prints one), 8-byte messages.
							if i == 1 || kind == "bw" {
								rows := parsePerfRows(t, "perftest", out)
								if rows[0].bytes != 8 || rows[0].iters != iters {
									t.Fatalf("perftest row %+v", rows[0])
								}
							}
							continue
						}
						var res perf.Result
						if err := json.Unmarshal([]byte(out), &res); err != nil {
							t.Fatalf("rdmactl JSON: %v\n%s", err, out)
						}
						a := res.Atomic
						if res.Test != "atomic_"+kind || a == nil || !a.OK || a.Op != op {
							t.Fatalf("rdmactl %s: test %q atomic %+v", []string{"server", "client"}[i], res.Test, a)
						}
						if i == 0 && (len(a.Target) != 1 || a.Target[0] != wantTarget || a.ExpectedTarget == nil) {
							t.Fatalf("server's target words add up to %v, want %d", a.Target, wantTarget)
						}
						if i == 1 {
							if len(a.Fetched) != 1 || len(a.Before) != 1 || len(a.After) != 1 {
								t.Fatalf("client's check %+v", *a)
							}
							b, af, f := a.Before[0], a.After[0], a.Fetched[0]
							ok := af-b == iters && f == af-1
							if op == "CMP_AND_SWAP" {
								ok = b == af && f == af
							}
							if pr.server == "r" && b != 0 {
								ok = false // rdmactl's memory starts at 0
							}
							if !ok {
								t.Fatalf("client: peer's word %d -> %d, last returned %d", b, af, f)
							}
						}
						if i == 1 || kind == "bw" {
							var n uint64
							if kind == "bw" && len(res.BW) == 1 {
								n = res.BW[0].Iters
							} else if kind == "lat" && len(res.Lat) == 1 {
								n = res.Lat[0].Iters
							}
							if n != iters {
								t.Fatalf("rdmactl %s reported %d iterations: %s", []string{"server", "client"}[i], n, out)
							}
						}
						t.Logf("%s: %+v", []string{"server", "client"}[i], *a)
					}
				})
			}
		}
	}
}

// atomicArgs is one side of an atomic test, server on rxe0 or client
// on rxe1: "r" (rdmactl, JSON) or "p" (ib_atomic_<kind>).
func atomicArgs(kind, op, who string, port, iters int, client bool) []string {
	a := []string{"-d", "rxe0", "-A", op, "-n", strconv.Itoa(iters), "-p", strconv.Itoa(port)}
	if client {
		a[1] = "rxe1"
		a = append(a, perfServerIP)
	}
	return perfCmd(who, "atomic", kind, []string{"-j"}, a...)
}
