package inventory

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

func set(dev string, port uint32, src string, kv ...any) CounterSet {
	s := CounterSet{Dev: dev, Port: port, Source: src}
	for i := 0; i < len(kv); i += 2 {
		s.Counters = append(s.Counters, sysfs.Counter{Name: kv[i].(string), Value: toU64(kv[i+1])})
	}
	return s
}

func toU64(v any) uint64 {
	switch x := v.(type) {
	case int:
		return uint64(x)
	case uint64:
		return x
	}
	panic("value")
}

func snap(at time.Duration, idx map[string]uint32, sets ...CounterSet) *CounterSnapshot {
	return &CounterSnapshot{Time: t0.Add(at), Sets: sets, Index: idx}
}

func rateOfName(t *testing.T, rep *RateReport, dev, src, name string) Rate {
	t.Helper()
	for _, r := range rep.Rates {
		if r.Dev == dev && r.Source == src && r.Name == name {
			return r
		}
	}
	t.Fatalf("no rate for %s %s %s in %+v", dev, src, name, rep.Rates)
	return Rate{}
}

func TestRatesPlain(t *testing.T) {
	a := snap(0, nil, set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 100, "sent_pkts", 7))
	b := snap(2*time.Second, nil, set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 300, "sent_pkts", 7))
	rep, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	r := rateOfName(t, rep, "rxe0", SrcHWCounters, "rcvd_pkts")
	if r.Delta != 200 || r.PerSec != 100 || r.Prev != 100 || r.Value != 300 || r.Wrapped || r.Reset || r.Saturated || !r.Moved() {
		t.Errorf("rcvd_pkts %+v", r)
	}
	if s := rateOfName(t, rep, "rxe0", SrcHWCounters, "sent_pkts"); s.Moved() || s.Delta != 0 {
		t.Errorf("sent_pkts %+v", s)
	}
	if rep.Interval != 2*time.Second || len(rep.Appeared)+len(rep.Vanished) != 0 {
		t.Errorf("report %+v", rep)
	}
}

func TestRatesWrap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		prev, cur  uint64
		delta      uint64
		width      uint8
		wrap, rset bool
	}{
		// A 32-bit hardware counter (mlx5 queue counters) past 2^32.
		{"32-bit wrap", math.MaxUint32 - 99, 50, 150, 32, true, false},
		// A 64-bit counter past 2^64.
		{"64-bit wrap", math.MaxUint64 - 9, 5, 15, 64, true, false},
		// Down by a little: not a wrap (it would mean ~2^32 events).
		{"small drop is a reset", 1000, 5, 5, 64, false, true},
		// Above 32 bits and down to small: a reset, not a 64-bit wrap.
		{"reset from above 32 bits", 1 << 40, 12, 12, 64, false, true},
		{"to zero", 1 << 20, 0, 0, 64, false, true},
	} {
		a := snap(0, nil, set("mlx5_0", 1, SrcNetlink, "out_of_buffer", tc.prev))
		b := snap(time.Second, nil, set("mlx5_0", 1, SrcNetlink, "out_of_buffer", tc.cur))
		rep, err := Rates(a, b)
		if err != nil {
			t.Fatal(err)
		}
		r := rateOfName(t, rep, "mlx5_0", SrcNetlink, "out_of_buffer")
		if r.Delta != tc.delta || r.Width != tc.width || r.Wrapped != tc.wrap || r.Reset != tc.rset || r.PerSec != float64(tc.delta) || !r.Moved() {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

// PMA counters saturate: never a wrap, a drop is a reset, all ones is
// saturation at the kernel's width for that counter.
func TestRatesPMA(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ext       bool
		counter   string
		prev, cur uint64
		delta     uint64
		width     uint8
		sat, rset bool
	}{
		{"32-bit data saturates", false, "port_xmit_data", math.MaxUint32 - 10, math.MaxUint32, 10, 32, true, false},
		{"stuck saturated", false, "port_xmit_data", math.MaxUint32, math.MaxUint32, 0, 32, true, false},
		{"64-bit (extended) data", true, "port_xmit_data", math.MaxUint32, math.MaxUint32 + 10, 10, 64, false, false},
		{"64-bit at all ones", true, "port_rcv_packets", math.MaxUint64 - 1, math.MaxUint64, 1, 64, true, false},
		{"16-bit symbol_error saturates", false, "symbol_error", 65530, 65535, 5, 16, true, false},
		{"8-bit link_downed", false, "link_downed", 3, 255, 252, 8, true, false},
		{"4-bit integrity errors", false, "local_link_integrity_errors", 2, 15, 13, 4, true, false},
		{"cleared (perfquery -R) is a reset", false, "port_rcv_data", 1 << 31, 40, 40, 32, false, true},
		{"a drop from near the top is a reset, not a wrap", false, "port_xmit_packets", math.MaxUint32 - 5, 3, 3, 32, false, true},
	} {
		other := []any{tc.counter, tc.prev}
		if tc.ext {
			other = append(other, "unicast_xmit_packets", 1)
		}
		a := snap(0, nil, set("mlx5_0", 1, SrcCounters, other...))
		other[1] = tc.cur
		b := snap(time.Second, nil, set("mlx5_0", 1, SrcCounters, other...))
		rep, err := Rates(a, b)
		if err != nil {
			t.Fatal(err)
		}
		r := rateOfName(t, rep, "mlx5_0", SrcCounters, tc.counter)
		if r.Delta != tc.delta || r.Width != tc.width || r.Saturated != tc.sat || r.Reset != tc.rset || r.Wrapped {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

func TestRatesAppearVanish(t *testing.T) {
	a := snap(0, nil,
		set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 1),
		set("rxe1", 1, SrcHWCounters, "rcvd_pkts", 1),
		CounterSet{Dev: "rxe0", Port: 1, Source: SrcNetlink, Err: errors.New("refused")})
	b := snap(time.Second, nil,
		set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 5, "new_counter", 9),
		set("rxe2", 1, SrcHWCounters, "rcvd_pkts", 100),
		set("rxe0", 1, SrcNetlink, "rcvd_pkts", 5))
	rep, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rates) != 1 || rep.Rates[0].Dev != "rxe0" || rep.Rates[0].Delta != 4 {
		t.Errorf("rates %+v", rep.Rates)
	}
	want := []SetKey{{"rxe2", 1, SrcHWCounters}, {"rxe0", 1, SrcNetlink}}
	if !reflect.DeepEqual(rep.Appeared, want) || !reflect.DeepEqual(rep.Vanished, []SetKey{{"rxe1", 1, SrcHWCounters}}) {
		t.Errorf("appeared %v vanished %v", rep.Appeared, rep.Vanished)
	}
}

// Live snapshots match devices by NLDEV index: a rename keeps its rates,
// a device re-created under its old name is a vanished and a new one.
func TestRatesByIndex(t *testing.T) {
	a := snap(0, map[string]uint32{"rxe0": 0, "rxe1": 1},
		set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 10),
		set("rxe1", 1, SrcHWCounters, "rcvd_pkts", 1000))
	b := snap(time.Second, map[string]uint32{"fast0": 0, "rxe1": 2},
		set("fast0", 1, SrcHWCounters, "rcvd_pkts", 30),
		set("rxe1", 1, SrcHWCounters, "rcvd_pkts", 3))
	rep, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rates) != 1 || rep.Rates[0].Dev != "fast0" || rep.Rates[0].Delta != 20 {
		t.Errorf("rates %+v", rep.Rates)
	}
	if !reflect.DeepEqual(rep.Appeared, []SetKey{{"rxe1", 1, SrcHWCounters}}) || !reflect.DeepEqual(rep.Vanished, []SetKey{{"rxe1", 1, SrcHWCounters}}) {
		t.Errorf("re-created rxe1: appeared %v vanished %v", rep.Appeared, rep.Vanished)
	}
	// One side without indexes (netlink was not there): by name.
	c := snap(2*time.Second, nil, set("fast0", 1, SrcHWCounters, "rcvd_pkts", 31))
	rep, err = Rates(b, c)
	if err != nil || len(rep.Rates) != 1 || rep.Rates[0].Delta != 1 {
		t.Errorf("mixed: %+v %v", rep, err)
	}
}

func TestRatesZeroInterval(t *testing.T) {
	a := snap(time.Second, nil, set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 1))
	b := snap(time.Second, nil, set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 2))
	if rep, err := Rates(a, b); !errors.Is(err, ErrInterval) || rep != nil {
		t.Errorf("same time: %+v %v", rep, err)
	}
	c := snap(0, nil, set("rxe0", 1, SrcHWCounters, "rcvd_pkts", 2))
	if _, err := Rates(a, c); !errors.Is(err, ErrInterval) {
		t.Errorf("backwards: %v", err)
	}
}

func TestCounterUnit(t *testing.T) {
	if m, u := CounterUnit(SrcCounters, "port_rcv_data"); m != 4 || u != "bytes" {
		t.Errorf("port_rcv_data: %d %s", m, u)
	}
	if m, u := CounterUnit(SrcHWCounters, "port_rcv_data"); m != 1 || u != "count" {
		t.Errorf("hw port_rcv_data: %d %s", m, u)
	}
}

// TestCounterSnapshotLive: a live snapshot carries the NLDEV indexes.
func TestCounterSnapshotLive(t *testing.T) {
	k := &kernel{t: t, devs: []kdev{{idx: 4, name: "rxe0", ports: 1}}}
	src := liveSource(t, k)
	refs, err := src.Targets("", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.CounterSnapshot(refs, nil)
	if err != nil || s.Index["rxe0"] != 4 || len(s.Sets) == 0 || s.Time.IsZero() {
		t.Fatalf("snapshot %+v %v", s, err)
	}
	off, err := Captured(rxeTree).CounterSnapshot([]PortRef{{Dev: "rxe0", Port: 1}}, nil)
	if err != nil || off.Index != nil || len(off.Sets) == 0 {
		t.Errorf("offline snapshot %+v %v", off, err)
	}
}

// FuzzRateOf: for any two values the kernel may report, a rate is one of
// an increase, a wrap (not for PMA counters) or a reset, and its delta is
// what that case says.
func FuzzRateOf(f *testing.F) {
	f.Add(uint8(0), "port_xmit_data", false, uint64(math.MaxUint32-10), uint64(math.MaxUint32))
	f.Add(uint8(1), "out_of_buffer", false, uint64(math.MaxUint32-99), uint64(50))
	f.Add(uint8(2), "rcvd_pkts", false, uint64(math.MaxUint64-9), uint64(5))
	f.Add(uint8(0), "symbol_error", false, uint64(7), uint64(3))
	f.Add(uint8(0), "port_rcv_packets", true, uint64(1), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, src uint8, name string, ext bool, pv, v uint64) {
		source := []string{SrcCounters, SrcHWCounters, SrcNetlink}[int(src)%3]
		r := rateOf(source, name, ext, pv, v)
		switch {
		case r.Reset:
			if v >= pv || r.Delta != v || r.Wrapped {
				t.Fatalf("reset %+v", r)
			}
		case r.Wrapped:
			if source == SrcCounters || v >= pv || r.Delta >= 1<<63 {
				t.Fatalf("wrap %+v", r)
			}
			// Unsigned arithmetic: v-pv is the distance modulo 2^64.
			if (r.Width == 64 && r.Delta != v-pv) || (r.Width == 32 && r.Delta != v+(1<<32)-pv) || (r.Width != 32 && r.Width != 64) {
				t.Fatalf("wrap %+v", r)
			}
		default:
			if v < pv || r.Delta != v-pv {
				t.Fatalf("increase %+v", r)
			}
		}
		if r.Saturated && source != SrcCounters {
			t.Fatalf("saturated %s counter %+v", source, r)
		}
	})
}
