//go:build vmtest

package mesh

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostlistMatchesScontrol: every host list ExpandHostlist accepts,
// Slurm's own `scontrol show hostnames` expands to the same names, for a
// table of the forms Slurm writes and for generated ones; and those
// forms are accepted. It runs in the VM, whose root is the host's, where
// vm/run installed Debian's slurm-client: there scontrol is certain to
// be present (it needs no daemon, only a slurm.conf to read).
func TestHostlistMatchesScontrol(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=localhost State=UNKNOWN\nPartitionName=all Nodes=ALL Default=YES\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wellFormed := []string{
		"node1", "gpu[001-004,010],login1", "n[1-3]", "n[8-11]", "n[08-11]", "n[5]",
		"rack[1-2]-n[01-02]", "a[1-2]b[3,5]", "[1-2]", "n1,n1", "x[0-1],y[2],z",
		"node-a.example.com,node-b", "n[1-3,5-7]z[0-1]", "n[9-10]", "n[009-010]",
		"n[1-02]", "n[01-2]", "n[01-002]", "n[1,1]", "n[2,1]", "n[0-0]", "n[000]",
		"n[1-2][3-4]", "n1[1-2]", "n-1,n-[2-3]", "n[1-3,2]", "n[0100-0102]",
		"n[9-11]a[1]", "a-[1-2]", ".[1-2]", "a,,b", "n[0-65535]",
		"n[99999999999]", "n[18446744073709551615]", "gpu[0001-0016],cpu[1-4,7,9-10]",
	}
	malformed := []string{
		"n[", "n]", "n[1-", "n[3-1]", "n[a-b]", "n[1-2", "n[[1]]", "n[]", "n[1-2]-ib",
		"a[1-2]b[3]c", "[1-2]x", "n[ 1-2]", "n[1-2 ]", "n[1-2,]", "n[,1]", "n[1--2]",
		"n[-1]", "n[1-3:2]", "n[0-65536]", "n[18446744073709551616]", "n[1-2]1",
	}
	// Generated lists: up to 3 expressions, each a prefix and up to 2
	// bracket groups of up to 3 numbers or ranges, widths 1 to 3.
	rng := rand.New(rand.NewPCG(1, 2))
	var generated []string
	for range 200 {
		var exprs []string
		for range 1 + rng.IntN(3) {
			e := []string{"n", "gpu", "r-", "a.b", ""}[rng.IntN(5)]
			groups := rng.IntN(3)
			if e == "" && groups == 0 {
				e = "x"
			}
			for g := range groups {
				if g > 0 {
					e += []string{"-", "n", ""}[rng.IntN(3)]
				}
				var parts []string
				for range 1 + rng.IntN(3) {
					w := 1 + rng.IntN(3)
					lo := rng.IntN(20)
					p := fmt.Sprintf("%0*d", w, lo)
					if rng.IntN(2) == 0 {
						p += fmt.Sprintf("-%d", lo+rng.IntN(12))
					}
					parts = append(parts, p)
				}
				e += "[" + strings.Join(parts, ",") + "]"
			}
			exprs = append(exprs, e)
		}
		generated = append(generated, strings.Join(exprs, ","))
	}
	all := append(append(append([]string{}, wellFormed...), malformed...), generated...)

	// One scontrol for all of them (each start costs a second under
	// TCG): its commands from stdin, a sentinel between two lists. A list
	// it refuses prints nothing on stdout (its error goes to stderr).
	const sentinel = "zzsentinel"
	var in strings.Builder
	for _, s := range all {
		fmt.Fprintf(&in, "show hostnames %s\nshow hostnames %s\n", s, sentinel)
	}
	cmd := exec.Command("scontrol")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	// Exit 1 when a list was refused; its error went to stderr.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("scontrol: %v\n%s", err, out)
	}
	// Reading commands from a pipe, it echoes each after its prompt
	// ("scontrol: show hostnames ..."); a host name holds no space.
	var names strings.Builder
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if !strings.HasPrefix(l, "scontrol: ") {
			names.WriteString(l)
		}
	}
	chunks := strings.Split(names.String(), sentinel+"\n")
	if len(chunks) != len(all)+1 {
		t.Fatalf("scontrol printed %d lists for %d", len(chunks)-1, len(all))
	}
	accepted := 0
	for i, s := range all {
		theirs := strings.Fields(chunks[i])
		ours, err := ExpandHostlist(s)
		if err != nil {
			if i < len(wellFormed) {
				t.Errorf("%q: %v; scontrol gives %q", s, err, theirs)
			}
			continue
		}
		accepted++
		if i >= len(wellFormed) && i < len(wellFormed)+len(malformed) {
			t.Errorf("%q: accepted as %q", s, ours)
		}
		if strings.Join(ours, " ") != strings.Join(theirs, " ") {
			t.Errorf("%q: ours %q, scontrol %q", s, ours, theirs)
		}
	}
	t.Logf("%d host lists, %d accepted, each expanded as scontrol does", len(all), accepted)
}
