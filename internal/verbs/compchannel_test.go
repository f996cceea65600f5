package verbs

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzParseCompEvent: whatever a completion channel's read() returns,
// parseCompEvent takes an 8-byte desc naming a slot and nothing else.
func FuzzParseCompEvent(f *testing.F) {
	ev := func(h uint64) []byte { return binary.LittleEndian.AppendUint64(nil, h) }
	f.Add(ev(0))
	f.Add(ev(1))
	f.Add(ev(maxChannelCQs))
	f.Add(ev(^uint64(0)))
	f.Add([]byte{1, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		slot, ok := parseCompEvent(b)
		if !ok {
			return
		}
		if len(b) != 8 || slot < 0 || slot >= maxChannelCQs || uint64(slot) != binary.LittleEndian.Uint64(b) {
			t.Fatalf("%x -> slot %d", b, slot)
		}
	})
}

// testChannel is a CompChannel over a pipe: the test writes event descs
// where the kernel would.
func testChannel(t *testing.T) (*CompChannel, int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	st := &chanState{pfd: [1]unix.PollFd{{Fd: int32(p[0]), Events: unix.POLLIN}}}
	ch := &CompChannel{ctx: &Context{dev: Device{Name: "test0"}}, fd: p[0], st: st}
	return ch, p[1]
}

// TestCompChannelWait: Wait times out on an empty channel, then reads
// every pending event, counting and disarming each event's slot, and
// skips a desc naming no slot.
func TestCompChannelWait(t *testing.T) {
	ch, w := testChannel(t)
	for _, attached := range []bool{true, false} {
		if n, err := ch.Wait(1e6, attached); n != 0 || err != nil {
			t.Fatalf("empty channel: %d events, %v", n, err)
		}
	}
	ch.st.armed[0], ch.st.armed[1] = true, true
	for _, h := range []uint64{1, 1, 0, 999} {
		if _, err := unix.Write(w, binary.LittleEndian.AppendUint64(nil, h)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := ch.Wait(1e9, false)
	if err != nil || n != 3 {
		t.Fatalf("Wait: %d events, %v; want 3", n, err)
	}
	if ch.st.events[0] != 1 || ch.st.events[1] != 2 || ch.st.armed[0] || ch.st.armed[1] || ch.Stray() != 1 {
		t.Fatalf("events %v, armed %v, stray %d", ch.st.events[:2], ch.st.armed[:2], ch.Stray())
	}
}

// TestArmCommand: Arm writes REQ_NOTIFY_CQ (command 23, in_words 4,
// out_words 0, the CQ's handle, solicited_only 0) once, and not again
// while armed; a failed write comes back as the preallocated error.
func TestArmCommand(t *testing.T) {
	ch, _ := testChannel(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	ch.live = 0
	cq := &CQ{ev: ch.attach(3, p[1], 0x1234, nil)}
	for i, want := range []bool{true, false} {
		did, err := cq.Arm()
		if err != nil || did != want {
			t.Fatalf("Arm #%d: did %t, %v", i, did, err)
		}
	}
	got := make([]byte, 64)
	n, err := unix.Read(p[0], got)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{23, 0, 0, 0, 4, 0, 0, 0, 0x34, 0x12, 0, 0, 0, 0, 0, 0}
	if string(got[:n]) != string(want) {
		t.Fatalf("REQ_NOTIFY_CQ % x, want % x", got[:n], want)
	}
	unix.Close(p[1])
	ch.st.armed[3] = false
	if _, err := cq.Arm(); err == nil || !errorsIsErrno(err, unix.EBADF) {
		t.Fatalf("Arm on a closed fd: %v", err)
	}
	if (&CQ{}).EventsRead() != 0 {
		t.Fatal("EventsRead without a channel")
	}
	if _, err := (&CQ{}).Arm(); err != errNoChannel {
		t.Fatalf("Arm without a channel: %v", err)
	}
}

func errorsIsErrno(err error, e unix.Errno) bool {
	ce, ok := err.(*chanError)
	return ok && ce.errno == e
}

// fakeArmer is a provider CQ armed in user space: it records each arm.
type fakeArmer struct {
	ProviderCQ
	sns []uint32
}

func (f *fakeArmer) Arm(sn uint32, solicited bool) { f.sns = append(f.sns, sn) }

// TestArmInUserSpace: a CQArmer is armed through its own Arm, with the
// number of events read for the CQ as sn, once until its next event; a
// closed CQ is refused and not armed.
func TestArmInUserSpace(t *testing.T) {
	ch, w := testChannel(t)
	f := &fakeArmer{}
	cq := &CQ{prov: f, ev: ch.attach(3, -1, 1, f)}
	ev := binary.LittleEndian.AppendUint64(nil, 3)
	for i := uint32(0); i < 3; i++ {
		if did, err := cq.Arm(); !did || err != nil {
			t.Fatalf("arming %d: %t, %v", i, did, err)
		}
		if did, err := cq.Arm(); did || err != nil {
			t.Fatalf("arming %d again before its event: %t, %v", i, did, err)
		}
		if _, err := unix.Write(w, ev); err != nil {
			t.Fatal(err)
		}
		if n, err := ch.Wait(1e9, false); n != 1 || err != nil {
			t.Fatalf("Wait after arming %d: %d events, %v", i, n, err)
		}
	}
	if fmt.Sprint(f.sns) != "[0 1 2]" {
		t.Errorf("armed with sn %v, want [0 1 2]", f.sns)
	}
	cq.ev.closed = true
	if did, err := cq.Arm(); did || err != ErrClosed || len(f.sns) != 3 {
		t.Errorf("Arm on a closed CQ: %t, %v, arms %v", did, err, f.sns)
	}
}
