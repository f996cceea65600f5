package rtloop

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		want Mode
		env  string
		got  Mode
	}{
		{Plain, "detached", Plain}, // the flag wins
		{Detached, "plain", Detached},
		{Auto, "plain", Plain},
		{Auto, "detached", Detached},
		{Auto, "", Detached}, // the probe passes here
		{Auto, "auto", Detached},
		{Auto, "fast", Plain}, // a bad value: the safe mode
	} {
		if got, why := choose(c.want, c.env); got != c.got {
			t.Errorf("choose(%v, %q) = %v (%s), want %v", c.want, c.env, got, why, c.got)
		}
	}
	for _, s := range []string{"auto", "detached", "plain"} {
		if m, err := ParseMode(s); err != nil || m.String() != s {
			t.Errorf("ParseMode(%q) = %v, %v", s, m, err)
		}
	}
}

// TestClockAgrees: a wide bracket (a preempted probe) passes, a runtime
// clock outside the bracket or standing still fails.
func TestClockAgrees(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		dn, lo, hi time.Duration
		ok         bool
	}{
		{ms, ms, ms, true},
		{ms, ms / 2, 30 * ms, true}, // preempted between the reads
		{30 * ms, ms / 2, 30 * ms, true},
		{0, 0, ms, false},
		{31 * ms, ms, 30 * ms, false},
		{ms / 4, ms / 2, ms, false},
		{time.Duration(time.Now().UnixNano()), ms, ms, false}, // wall-clock nanoseconds
	} {
		if err := clockAgrees(c.dn, c.lo, c.hi); (err == nil) != c.ok {
			t.Errorf("clockAgrees(%v, %v, %v) = %v, want ok=%v", c.dn, c.lo, c.hi, err, c.ok)
		}
	}
	if err := probe(); err != nil {
		t.Error(err)
	}
}

// TestSelectFromEnv: RDMACTL_PERF_LOOP selects the mode of a process
// (a child each), the clock follows it, and a later Select does not
// change it.
func TestSelectFromEnv(t *testing.T) {
	if env := os.Getenv("RDMACTL_TEST_LOOP_CHILD"); env != "" {
		m := Selected()
		again := Select(Detached)
		t0 := Now()
		time.Sleep(time.Millisecond)
		d := Now() - t0
		fmt.Printf("mode=%v again=%v runtimeClock=%v advanced=%v\n", m, again, runtimeClock, d >= int64(time.Millisecond))
		return
	}
	for env, want := range map[string]string{
		"plain":    "mode=plain again=plain runtimeClock=false advanced=true",
		"detached": "mode=detached again=detached runtimeClock=true advanced=true",
	} {
		cmd := selfCommand("-test.run", "^TestSelectFromEnv$", "-test.v")
		cmd.Env = append(os.Environ(), "RDMACTL_TEST_LOOP_CHILD=1", EnvVar+"="+env)
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte(want)) {
			t.Errorf("%s=%s: %v; want %q in\n%s", EnvVar, env, err, want, out)
		}
	}
}

// selfCommand runs this test binary again with args, through
// $RDMACTL_TEST_EXEC when set (scripts/test-arm64.sh sets it to
// qemu-aarch64-static: without binfmt_misc the binary cannot exec itself).
func selfCommand(args ...string) *exec.Cmd {
	if wrap := strings.Fields(os.Getenv("RDMACTL_TEST_EXEC")); len(wrap) > 0 {
		return exec.Command(wrap[0], append(append(wrap[1:len(wrap):len(wrap)], os.Args[0]), args...)...)
	}
	return exec.Command(os.Args[0], args...)
}
