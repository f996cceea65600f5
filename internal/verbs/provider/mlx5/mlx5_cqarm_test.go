package mlx5

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/testexec"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// mlx5ArmCase is one arming: arm_sn (the events taken so far, unmasked),
// consumer index (unmasked), CQN, solicited only.
type mlx5ArmCase struct {
	sn, ci, cqn uint32
	sol         bool
}

// mlx5TestArmCQ is a CQ of ncqe entries whose CQ doorbell is offset
// MLX5_CQ_DOORBELL of an ordinary page (returned).
func mlx5TestArmCQ(t testing.TB, ncqe uint32) (*mlx5CQ, []byte) {
	t.Helper()
	cq, err := mlx5NewCQ(ncqe)
	if err != nil {
		t.Fatal(err)
	}
	uar, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	cq.armReg = unsafe.Pointer(&uar[mlx5CQDoorbell])
	t.Cleanup(func() { _ = cq.Release(); _ = unix.Munmap(uar) })
	return cq, uar
}

// TestMLX5ArmGolden: the doorbell record and the UAR after arming are,
// byte for byte, what golden.c's copy of mlx5_arm_cq (mlx5dv.h's
// constants and struct mlx5dv_cq) leaves: sequence numbers past 3 (the
// count of events, masked), consumer indices past 2^24, both commands.
func TestMLX5ArmGolden(t *testing.T) {
	cases := []mlx5ArmCase{
		{0, 0, 0x1a5, false}, {1, 1, 0x1a5, false}, {2, 7, 0x1a5, true}, {3, 0xffffff, 0xffffff, false},
		{4, 0x1000000, 0x10, true}, {7, 0x12345678, 0xabcdef, false}, {0xffffffff, 0xfffffffe, 1, true},
		{5, 300, 0x2a5, false}, {6, 65535, 0x2a5, true},
	}
	var in strings.Builder
	for _, c := range cases {
		fmt.Fprintf(&in, "%d %d %d %d\n", c.sn, c.ci, c.cqn, boolBit(c.sol))
	}
	cmd := testexec.Command(mlx5Golden(t), "cqarm")
	cmd.Stdin = strings.NewReader(in.String())
	want, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	const rec = 8 + 64
	if len(want) != len(cases)*rec {
		t.Fatalf("golden wrote %d bytes for %d armings", len(want), len(cases))
	}
	cq, uar := mlx5TestArmCQ(t, 8)
	for i, c := range cases {
		clear(uar[:64])
		cq.ci = c.ci + 1
		cq.consumed(c.ci) // word 0 as Poll leaves it
		clear(cq.dbr[mlx5CQArmDB : mlx5CQArmDB+4])
		cq.cqn = c.cqn
		cq.Arm(c.sn, c.sol)
		w := want[i*rec:][:rec]
		if !bytes.Equal(cq.dbr[:8], w[:8]) {
			t.Errorf("%+v: doorbell record % x, mlx5_arm_cq's % x", c, cq.dbr[:8], w[:8])
		}
		if !bytes.Equal(uar[:64], w[8:]) {
			t.Errorf("%+v: UAR % x, mlx5_arm_cq's % x", c, uar[:64], w[8:])
		}
	}
	// One spelled out: sn 1, REQ_NOT, ci 1, CQN 0x1a5.
	if got, want := mlx5ArmDoorbell(mlx5ArmWord(1, 1, false), 0x1a5), uint64(0x10000001_000001a5); got != want {
		t.Errorf("doorbell %#x, want %#x", got, want)
	}
}

// TestMLX5CreateCQArmReg: an mlx5 CQ is created without a UAR page index
// (the kernel then uses the context's first static UAR, create_cq_user),
// and a CQ made on a channel arms through offset 0x20 of that UAR page:
// the doorbell record's word 1, then the register, nothing through the
// command fd.
func TestMLX5CreateCQArmReg(t *testing.T) {
	c, err := mlx5OpenContext(-1, mlx5FakeResp(), 4096, mlx5FakeUARs(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := &verbs.CQRequest{Device: "mlx5_0", CQE: 100}
	var ucmd mlx5CreateCQ
	p, err := c.CreateCQ(req, func(in, out []byte) (uint32, error) {
		copy(rawmem.Of(&ucmd), in)
		r := mlx5CreateCQResp{CQN: 0x77}
		copy(out, rawmem.Of(&r))
		req.ActualCQE = uint32(req.CQE)
		return 5, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cq := p.(*mlx5CQ)
	defer cq.Release()
	if ucmd.Flags != 0 || ucmd.UARPageIndex != 0 || ucmd.CQESize != mlx5CQESize || ucmd.DBAddr != rawmem.Addr(cq.dbr) {
		t.Errorf("CREATE_CQ udata %+v: want no UAR page index, 64-byte CQEs, the CQ's doorbell record", ucmd)
	}
	if cq.armReg != unsafe.Pointer(&c.uars[0][mlx5CQDoorbell]) {
		t.Fatal("the CQ doorbell is not offset 0x20 of the first UAR page")
	}
	ch, _ := pipeChannel(t)
	ecq := verbs.NewUnownedCQ(cq, ch, 0)
	if did, err := ecq.Arm(); !did || err != nil {
		t.Fatalf("Arm: %t, %v", did, err)
	}
	if got, want := binary.BigEndian.Uint64(c.uars[0][mlx5CQDoorbell:]), uint64(0x77); got != want {
		t.Errorf("CQ doorbell %#x, want %#x", got, want)
	}
	if w := binary.BigEndian.Uint32(cq.dbr[4:]); w != 0 {
		t.Errorf("arm word %#x, want 0 (sn 0, REQ_NOT, ci 0)", w)
	}
}

// TestMLX5ArmSequence: the arm sequence number is the count of events
// Wait read for the CQ, mod 4 (rdma-core's arm_sn++ in mlx5_cq_event),
// the consumer index the one Poll published; an armed CQ is not armed
// again until its event.
func TestMLX5ArmSequence(t *testing.T) {
	cq, uar := mlx5TestArmCQ(t, 8)
	cq.cqn = 0x1a5
	ch, w := pipeChannel(t)
	ecq := verbs.NewUnownedCQ(cq, ch, 2)
	ev := binary.LittleEndian.AppendUint64(nil, 2)
	for i := uint32(0); i < 9; i++ {
		cq.ci = i*5 + 1
		cq.consumed(i * 5)
		clear(uar[:64])
		did, err := ecq.Arm()
		if !did || err != nil {
			t.Fatalf("arming %d: %t, %v", i, did, err)
		}
		want := mlx5ArmDoorbell((i&3)<<28|i*5, 0x1a5)
		if got := binary.BigEndian.Uint64(uar[mlx5CQDoorbell:]); got != want {
			t.Fatalf("arming %d (after %d events): doorbell %#x, want %#x", i, i, got, want)
		}
		if got := binary.BigEndian.Uint32(cq.dbr[4:]); got != uint32(want>>32) {
			t.Fatalf("arming %d: arm word %#x, want %#x", i, got, want>>32)
		}
		clear(uar[:64])
		if did, err := ecq.Arm(); did || err != nil {
			t.Fatalf("arming %d again before the event: %t, %v", i, did, err)
		}
		if !bytes.Equal(uar[:64], make([]byte, 64)) {
			t.Fatalf("arming %d again rang the doorbell", i)
		}
		if _, err := unix.Write(w, ev); err != nil {
			t.Fatal(err)
		}
		if n, err := ch.Wait(1e9, i%2 == 0); n != 1 || err != nil {
			t.Fatalf("Wait after arming %d: %d events, %v", i, n, err)
		}
	}
	if ecq.EventsRead() != 9 {
		t.Errorf("%d events read, want 9", ecq.EventsRead())
	}
}

// mlx5ArmModel plays the device's and the kernel's part in completion
// events for one CQ: it takes each arm doorbell from the UAR (checking it
// against the doorbell record, the CQN, the consumer index published and
// the events raised so far, mod 4), and when it writes a CQE into an
// armed CQ it raises one event: a desc naming the CQ's slot on the
// channel's pipe, as the kernel's completion handler queues it. eager
// also fires at arming time when CQEs beyond the doorbell's consumer
// index are waiting; without it, only a CQE written after the arming
// fires (both must work for a loop that polls again after arming).
type mlx5ArmModel struct {
	m      *mlx5Model
	uar    []byte
	w      int // the channel's pipe
	desc   [8]byte
	eager  bool
	armed  bool
	raised uint32 // events raised
	arms   uint32 // doorbells taken
}

// doorbell takes a pending arm doorbell, if any.
func (a *mlx5ArmModel) doorbell() {
	reg := a.uar[mlx5CQDoorbell:][:8]
	v := binary.BigEndian.Uint64(reg)
	if v == 0 {
		return
	}
	clear(reg)
	a.arms++
	cq := a.m.cq
	word := uint32(v >> 32)
	switch {
	case word != be32At(cq.dbr, mlx5CQArmDB):
		a.m.fail("doorbell word %#x, doorbell record %#x", word, be32At(cq.dbr, mlx5CQArmDB))
	case uint32(v) != cq.cqn:
		a.m.fail("doorbell CQN %#x, CQ %#x", uint32(v), cq.cqn)
	case word>>28 != a.raised&3:
		a.m.fail("arm sn %d after %d events", word>>28, a.raised)
	case word&0xffffff != be32At(cq.dbr, 0):
		a.m.fail("arm ci %d, published %d", word&0xffffff, be32At(cq.dbr, 0))
	case word&mlx5CQDBReqNotSol != 0:
		a.m.fail("solicited-only arming")
	case a.armed:
		a.m.fail("armed twice without an event")
	}
	a.armed = true
	if a.eager && a.m.pi&0xffffff != word&0xffffff {
		a.fire()
	}
}

func (a *mlx5ArmModel) fire() {
	if !a.armed {
		return
	}
	a.armed = false
	a.raised++
	if _, err := unix.Write(a.w, a.desc[:]); err != nil {
		a.m.fail("event: %v", err)
	}
}

// execute runs the posted WQEs, firing if one wrote a CQE into the armed
// CQ.
func (a *mlx5ArmModel) execute() {
	pi := a.m.pi
	a.m.step()
	if a.m.pi != pi {
		a.fire()
	}
}

// mlx5EventRound is one message of a loop with -e as perf runs it
// (evWait.step): post a signaled send, then poll; empty, arm and poll
// again; still empty, wait for the event. The device executes the WQE
// at point at: 0 before the first poll, 1 between it and the arming, 2
// after the arming. It returns the waits that ended without an event.
func mlx5EventRound(q *mlx5QP, ecq *verbs.CQ, ch *verbs.CompChannel, a *mlx5ArmModel, wrs []verbs.SendWR, wcs []verbs.WC, at int) (missed int, err error) {
	if err := q.PostSend(wrs); err != nil {
		return 0, err
	}
	done := false
	if at == 0 {
		a.execute()
		done = true
	}
	for {
		n, err := a.m.cq.Poll(wcs)
		if err != nil || n > 0 {
			return missed, err
		}
		if !done && at == 1 {
			a.execute()
			done = true
		}
		did, err := ecq.Arm()
		if err != nil {
			return missed, err
		}
		a.doorbell()
		if did {
			continue
		}
		if !done {
			a.execute()
			done = true
		}
		k, err := ch.Wait(1e8, false)
		if err != nil {
			return missed, err
		}
		if k == 0 {
			missed++
			if missed > 3 {
				return missed, fmt.Errorf("no event for a completion")
			}
		}
	}
}

// TestMLX5ArmModel runs thousands of messages through the loop above
// against both device models, the device executing at each of the three
// points; every completion arrives, no wait ends without an event, every
// doorbell carries the right sequence number and consumer index, and
// every event raised is read.
func TestMLX5ArmModel(t *testing.T) {
	for _, eager := range []bool{false, true} {
		t.Run(fmt.Sprintf("eager=%t", eager), func(t *testing.T) {
			q, cq, uar := mlx5TestQP(t, 8, 0, 0, 8)
			cq.armReg, cq.cqn = unsafe.Pointer(&uar[mlx5CQDoorbell]), 0x3c1
			ch, w := pipeChannel(t)
			ecq := verbs.NewUnownedCQ(cq, ch, 1)
			a := &mlx5ArmModel{m: &mlx5Model{q: q, cq: cq}, uar: uar, w: w, eager: eager}
			binary.LittleEndian.PutUint64(a.desc[:], 1)
			wrs := []verbs.SendWR{{WRID: 7, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline, SGE: verbs.SGE{Length: 0}}}
			wcs := make([]verbs.WC, 4)
			const rounds = 3000
			var waited [3]int // rounds by the device's point, that waited
			for i := 0; i < rounds; i++ {
				// The points in a scrambled order, so that every point
				// follows every other (an arming left from the last
				// round, or none).
				at := int(uint32(i)*2654435761>>16) % 3
				before := ecq.EventsRead()
				missed, err := mlx5EventRound(q, ecq, ch, a, wrs, wcs, at)
				if err != nil {
					t.Fatalf("round %d (device at %d): %v", i, at, err)
				}
				if missed != 0 {
					t.Fatalf("round %d (device at %d): %d waits ended without an event", i, at, missed)
				}
				if ecq.EventsRead() != before {
					waited[at]++
				}
				if bad := a.m.bad.Load(); bad != nil {
					t.Fatalf("round %d: %s", i, bad)
				}
			}
			// An eager device may leave one event queued; read it.
			if n, err := ch.Wait(0, false); err != nil || ecq.EventsRead() != uint64(a.raised) {
				t.Fatalf("%d events raised, %d read (%d of them at the end), %v", a.raised, ecq.EventsRead(), n, err)
			}
			if cq.ci != rounds {
				t.Errorf("%d completions polled, want %d", cq.ci, rounds)
			}
			if waited[2] == 0 {
				t.Error("no round waited for an event")
			}
			t.Logf("%d messages: %d armings, %d events; rounds that waited, by the device's point: %v", rounds, a.arms, a.raised, waited)
		})
	}
}

// TestMLX5ArmAllocs: arming, taking the event and polling allocate
// nothing (the loop of TestMLX5ArmModel, device after the arming).
func TestMLX5ArmAllocs(t *testing.T) {
	q, cq, uar := mlx5TestQP(t, 8, 0, 0, 8)
	cq.armReg, cq.cqn = unsafe.Pointer(&uar[mlx5CQDoorbell]), 0x3c1
	ch, w := pipeChannel(t)
	ecq := verbs.NewUnownedCQ(cq, ch, 0)
	a := &mlx5ArmModel{m: &mlx5Model{q: q, cq: cq}, uar: uar, w: w}
	wrs := []verbs.SendWR{{WRID: 7, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline}}
	wcs := make([]verbs.WC, 4)
	allocs := testing.AllocsPerRun(2000, func() {
		if missed, err := mlx5EventRound(q, ecq, ch, a, wrs, wcs, 2); err != nil || missed != 0 {
			t.Fatalf("%d missed, %v", missed, err)
		}
	})
	if allocs != 0 {
		t.Errorf("arm, wait and poll allocate %.1f times per message, want 0", allocs)
	}
	if a.raised < 2000 {
		t.Errorf("%d events for 2000+ messages: the path measured did not wait", a.raised)
	}
}

// pipeChannel is a completion channel over a pipe: the test writes event
// descs where the kernel would.
func pipeChannel(t *testing.T) (*verbs.CompChannel, int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	return verbs.NewPipeChannel(p[0], "test0"), p[1]
}
