package top

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// fakeInv is a live inventory of one device, rxe0, whose counters move by
// step per Sample and whose resources are owned by process 100 ("perf")
// and the kernel.
type fakeInv struct {
	n      *int // samples so far
	dumps  *int // QP dumps made
	qpN    int  // QPs of process 100
	at     time.Time
	noPort bool     // rxe0 vanished
	devs   []string // devices with resources; nil: rxe0
}

func (f fakeInv) Offline() bool { return false }
func (f fakeInv) Ports(dev string, port uint32, o inventory.PortOptions) ([]inventory.Port, error) {
	if f.noPort {
		return nil, &inventory.NotFoundError{Kind: "device", Name: dev}
	}
	return []inventory.Port{{DevIndex: up(1), Dev: "rxe0", Port: 1, State: "ACTIVE", RateGbps: fp(10)}}, nil
}
func (f fakeInv) CounterSnapshot(refs []inventory.PortRef, only []string) (*inventory.CounterSnapshot, error) {
	v := uint64(*f.n) * 1000
	return &inventory.CounterSnapshot{Time: f.at, Index: map[string]uint32{"rxe0": 1}, Sets: []inventory.CounterSet{
		{Dev: "rxe0", Port: 1, Source: inventory.SrcNetlink, Counters: []sysfs.Counter{{Name: "rcvd_pkts", Value: v}, {Name: "sent_pkts", Value: 2 * v}}}}}, nil
}
func (f fakeInv) ResSummaries(dev string) ([]nldev.Summary, error) {
	var out []nldev.Summary
	for _, d := range f.devices() {
		out = append(out, nldev.Summary{DevName: d, Counts: map[string]uint64{"qp": uint64(1 + f.qpN), "cq": 2, "mr": 1}})
	}
	return out, nil
}
func (f fakeInv) devices() []string {
	if f.devs == nil {
		return []string{"rxe0"}
	}
	return f.devs
}
func (f fakeInv) QPs(rf inventory.ResFilter) ([]inventory.QP, error) {
	*f.dumps++
	qs := []inventory.QP{{QP: nldev.QP{ResHead: nldev.ResHead{DevName: rf.Dev}}, Owner: kernelOwner}}
	for range f.qpN {
		qs = append(qs, inventory.QP{QP: nldev.QP{ResHead: rxe0}, Owner: perfOwner})
	}
	return qs, nil
}
func (f fakeInv) CQs(inventory.ResFilter) ([]inventory.CQ, error) {
	return []inventory.CQ{{CQ: nldev.CQ{ResHead: rxe0}, Owner: perfOwner}, {CQ: nldev.CQ{ResHead: rxe0}, Owner: kernelOwner}}, nil
}
func (f fakeInv) MRs(inventory.ResFilter) ([]inventory.MR, error) {
	return []inventory.MR{{MR: nldev.MR{ResHead: rxe0}, Owner: perfOwner}}, nil
}

var (
	rxe0        = nldev.ResHead{DevName: "rxe0"}
	perfOwner   = inventory.Owner{PID: up(100), Comm: "perf"}
	kernelOwner = inventory.Owner{Comm: "ib_core", Kernel: true}
)

// fakeQPC is QP counters bound in automatic mode: counter 1 of process 100
// on rxe0/1 and counter 2 of process 200 (which holds no resource any
// more), moving by the frame; at frame 3 counter 1 is reset (re-bound).
type fakeQPC struct{ n *int }

func (q fakeQPC) BoundCounters() ([]BoundCounter, error) {
	n := uint64(*q.n)
	c1 := []sysfs.Counter{{Name: "rx_write_requests", Value: 500 * n}, {Name: "out_of_sequence", Value: n}, {Name: "port_xmit_data", Value: 1}}
	if n == 3 {
		c1[0].Value = 7
	}
	return []BoundCounter{
		{Dev: "rxe0", DevIndex: up(1), Port: 1, ID: 1, PID: 100, Comm: "perf", Counters: c1},
		{Dev: "rxe0", DevIndex: up(1), Port: 1, ID: 2, PID: 200, Comm: "gone", Counters: []sysfs.Counter{{Name: "rx_read_requests", Value: 10 * n}, {Name: "sent_pkts", Value: 40 * n}}},
	}, nil
}

func newFakeSampler() (*Sampler, *int, *int, *fakeInv) {
	n, dumps := 0, 0
	inv := &fakeInv{n: &n, dumps: &dumps, qpN: 2, at: t0}
	s := &Sampler{QPC: fakeQPC{&n}}
	s.Open = func() (Inventory, error) {
		n++
		inv.at = inv.at.Add(time.Second)
		return *inv, nil
	}
	return s, &n, &dumps, inv
}

func procOf(t *testing.T, f *Frame, pid uint32) Proc {
	t.Helper()
	for _, p := range f.Procs {
		if p.PID == pid {
			return p
		}
	}
	t.Fatalf("no process %d in %+v", pid, f.Procs)
	return Proc{}
}

// Per-process traffic from bound QP counters, and the process pane from
// the resources (kernel-owned objects left out).
func TestSamplerProcessTraffic(t *testing.T) {
	s, _, _, _ := newFakeSampler()
	f, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if f.Interval != 0 || f.Rows[0].TxPkts != nil {
		t.Errorf("first frame has rates: %+v", f)
	}
	p := procOf(t, f, 100)
	if p.QPs != 2 || p.CQs != 1 || p.MRs != 1 || p.Comm != "perf" || p.Dev != "rxe0" || p.Traffic != nil {
		t.Errorf("first frame perf %+v", p)
	}
	if f, err = s.Sample(); err != nil {
		t.Fatal(err)
	}
	if f.Interval != time.Second || !near(f.Rows[0].TxPkts, 2000) || !near(f.Rows[0].RxPkts, 1000) {
		t.Errorf("port row %+v", f.Rows[0])
	}
	p = procOf(t, f, 100)
	if p.Traffic == nil || !near(p.Traffic.Ops, 500) || !near(p.Traffic.OOS, 1) || !near(p.Traffic.TxBytes, 0) {
		t.Fatalf("perf traffic %+v", p.Traffic)
	}
	g := procOf(t, f, 200)
	if g.QPs != 0 || g.Comm != "gone" || g.Traffic == nil || !near(g.Traffic.TxPkts, 40) || !near(g.Traffic.Ops, 10) {
		t.Errorf("process 200 %+v %+v", g, g.Traffic)
	}
	if f.Procs[0].PID != 100 {
		t.Errorf("order %+v: most QPs first", f.Procs)
	}
	// Frame 3: counter 1 went down (reset), counted from 0 and noted.
	if f, err = s.Sample(); err != nil {
		t.Fatal(err)
	}
	if p = procOf(t, f, 100); !near(p.Traffic.Ops, 7) || len(p.Traffic.Notes) != 1 || p.Traffic.Notes[0] != "reset: rx_write_requests" {
		t.Errorf("reset %+v", p.Traffic)
	}
}

// Two bound counters of one process on one device add up.
func TestProcsSumCounters(t *testing.T) {
	a, _ := QPCounterSnapshot([]BoundCounter{
		{Dev: "mlx5_0", Port: 1, ID: 1, PID: 7, Counters: []sysfs.Counter{{Name: "sent_pkts", Value: 0}}},
		{Dev: "mlx5_0", Port: 2, ID: 1, PID: 7, Counters: []sysfs.Counter{{Name: "sent_pkts", Value: 0}}}}, t0)
	b, own := QPCounterSnapshot([]BoundCounter{
		{Dev: "mlx5_0", Port: 1, ID: 1, PID: 7, Counters: []sysfs.Counter{{Name: "sent_pkts", Value: 30}}},
		{Dev: "mlx5_0", Port: 2, ID: 1, PID: 7, Counters: []sysfs.Counter{{Name: "sent_pkts", Value: 12}}}}, t0.Add(time.Second))
	ps := Procs(Holdings{}, rates(t, a, b), own)
	if len(ps) != 1 || !near(ps[0].Traffic.TxPkts, 42) {
		t.Errorf("%+v", ps)
	}
}

// Resource lists are dumped again when the counts change, else for one
// device per frame: many idle devices cost one summary dump and one
// device's lists per frame.
func TestSamplerResourceCache(t *testing.T) {
	s, _, dumps, _ := newFakeSampler()
	for range 3 {
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
	}
	// One device is its own stalest: dumped every frame.
	if *dumps != 3 {
		t.Errorf("%d QP dumps over 3 unchanged frames of one device, want 3", *dumps)
	}
	// 100 devices: the first frame dumps each, later ones one each.
	s, _, dumps, inv := newFakeSampler()
	for i := range 100 {
		inv.devs = append(inv.devs, fmt.Sprintf("rxe%d", i))
	}
	for range 3 {
		if _, err := s.Sample(); err != nil {
			t.Fatal(err)
		}
	}
	if *dumps != 102 {
		t.Errorf("%d QP dumps over 3 frames of 100 devices, want 100+1+1", *dumps)
	}
	inv.qpN = 5
	f, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if *dumps != 202 || procOf(t, f, 100).QPs != 500 {
		t.Errorf("after a change: %d dumps, %+v", *dumps, f.Procs)
	}
}

// A named device that vanishes mid-run is said, not fatal; at the start
// it is an error.
func TestSamplerDeviceGone(t *testing.T) {
	s, _, _, inv := newFakeSampler()
	s.Dev = "rxe0"
	if _, err := s.Sample(); err != nil {
		t.Fatal(err)
	}
	inv.noPort = true
	f, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rows) != 0 || len(f.Events) == 0 || f.Events[len(f.Events)-1] != "rxe0 is gone" {
		t.Errorf("frame %+v", f)
	}
	s2, _, _, inv2 := newFakeSampler()
	inv2.noPort = true
	if _, err := s2.Sample(); !inventory.IsNotFound(err) {
		t.Errorf("first frame of a missing device: %v", err)
	}
}

// The captured rxe tree: rows from sysfs hw_counters, no process pane.
func TestSamplerCaptured(t *testing.T) {
	s := &Sampler{Open: func() (Inventory, error) { return inventory.Captured("../sysfs/testdata/rxe"), nil }}
	for i := range 2 {
		f, err := s.Sample()
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Rows) != 2 || f.Rows[0].Key() != "rxe0/1" || f.ProcErr == "" {
			t.Fatalf("frame %d: %+v", i, f)
		}
		if i == 1 && (!near(f.Rows[1].TxPkts, 0) || f.Rows[1].TxBytes != nil) {
			t.Errorf("rates %+v", f.Rows[1].Rates)
		}
	}
}
