//go:build vmtest

package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVMPerfDataValidation: --data_validation between two rdmactl sides
// on rxe, as perftest 6.29 runs it: the side that receives the data
// (write: the server; read: the client; -b: both) prints "VALIDATION:
// PASSED - N chunks, M bytes" after its results, N a multiple of the
// chunk (64 messages at -t 64 and 4 KiB: 256 KiB, over perftest's 64 KiB
// minimum) and at most the messages sent, M = N x 4096; the other side
// prints none. --data_validation_debug adds the ring's layout and the
// markers' figures. Against perftest 6.06, which has no such option, the
// rdmactl side refuses in one line, exit 6; nothing stays in the kernel.
func TestVMPerfDataValidation(t *testing.T) {
	resUnchanged(t, false)
	passed := regexp.MustCompile(`(?m)^VALIDATION: PASSED( \((SERVER|CLIENT)\))? - ([0-9]+) chunks, ([0-9]+) bytes`)
	const iters, chunk = 1500, 64
	for i, c := range []struct {
		verb     string
		extra    []string
		srv, cli bool // which side validates
	}{
		{"write", nil, true, false},
		{"read", nil, false, true},
		{"write", []string{"-b"}, true, true},
		{"read", []string{"-q", "2", "--data_validation_debug"}, false, true},
		{"write", []string{"-D", "4"}, true, false},
		{"write", []string{"-R"}, true, false},
		{"read", []string{"-z"}, false, true},
	} {
		t.Run(fmt.Sprintf("%s%s", c.verb, strings.Join(c.extra, "")), func(t *testing.T) {
			extra := append([]string{"--data_validation", "-s", "4096", "-t", "64", "-u", slowQPTimeout}, c.extra...)
			s, cl, _ := perfPairArgs(c.verb, "bw", "RC", extra, "r", "r", 24700+10*i)
			if !strings.Contains(strings.Join(c.extra, " "), "-D") {
				s, cl = setArg(s, "-n", strconv.Itoa(iters)), setArg(cl, "-n", strconv.Itoa(iters))
			}
			r := runPair(s, cl, pairOpts{timeout: 180 * time.Second})
			r.mustPass(t)
			qps := 1
			if strings.Contains(strings.Join(c.extra, " "), "-q 2") {
				qps = 2
			}
			for _, side := range []struct {
				name, out string
				checks    bool
			}{{"server", r.sout, c.srv}, {"client", r.cout, c.cli}} {
				m := passed.FindStringSubmatch(side.out)
				if !side.checks {
					if strings.Contains(side.out, "\nVALIDATION: ") {
						t.Fatalf("the %s sent the data but validated:\n%s", side.name, side.out)
					}
					continue
				}
				if m == nil {
					t.Fatalf("the %s printed no VALIDATION: PASSED line:\n%s", side.name, side.out)
				}
				n, _ := strconv.ParseUint(m[3], 10, 64)
				b, _ := strconv.ParseUint(m[4], 10, 64)
				bidir := strings.Contains(strings.Join(c.extra, " "), "-b")
				if role := map[bool]string{true: strings.ToUpper(side.name)}[bidir]; m[2] != role {
					t.Fatalf("the %s's line says role %q, want %q:\n%s", side.name, m[2], role, side.out)
				}
				most := uint64(iters * qps)
				if strings.Contains(strings.Join(c.extra, " "), "-D") {
					most = 1 << 40
				}
				if n == 0 || n%chunk != 0 || n > most || b != n*4096 {
					t.Fatalf("the %s validated %d messages, %d bytes; want a multiple of %d, at most %d, 4096 bytes each:\n%s", side.name, n, b, chunk, most, side.out)
				}
				if !strings.Contains(side.out, "---\n"+m[0]) {
					t.Fatalf("the %s's line does not follow its results:\n%s", side.name, side.out)
				}
				if strings.Contains(strings.Join(c.extra, " "), "--data_validation_debug") {
					for _, want := range []string{"[DATA_VALIDATION] validation_chunk_size=64 (tx_depth=64), chunk_bytes=262144, chunks_per_qp=", "  Markers: "} {
						if !strings.Contains(side.out, want) {
							t.Fatalf("--data_validation_debug: no %q:\n%s", want, side.out)
						}
					}
				}
				t.Logf("%s: %s", side.name, m[0])
			}
		})
	}
	t.Run("perftest_6.06_peer", func(t *testing.T) {
		s, cl, _ := perfPairArgs("write", "bw", "RC", []string{"-s", "4096"}, "p", "r", 24790)
		r := runPair(s, insertBefore(cl, perfServerIP, "--data_validation"), pairOpts{timeout: 60 * time.Second})
		if r.cerr == nil || !strings.Contains(r.cerr.Error(), "rdmactl exit 6") || !strings.Contains(r.cerr.Error(), "--data_validation: the peer is perftest 6.06") {
			t.Fatalf("client: %v; want exit 6 naming perftest 6.06", r.cerr)
		}
	})
}

// setArg sets option name's value in args (which has it).
func setArg(args []string, name, val string) []string {
	out := append([]string(nil), args...)
	for i := range out[:len(out)-1] {
		if out[i] == name {
			out[i+1] = val
		}
	}
	return out
}
