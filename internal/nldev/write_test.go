package nldev

import (
	"encoding/binary"
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
)

// attrList is a request's attributes in order, as (type, payload) pairs.
func attrList(b []byte) []attr { return parseAttrs(b).list }

func u32b(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// TestWriteRequests: each write sends rdma's attributes in rdma's order
// (iproute2 rdma/link.c, dev.c, sys.c, stat.c) with NLM_F_REQUEST|NLM_F_ACK.
func TestWriteRequests(t *testing.T) {
	on := true
	cntn := uint32(4)
	cases := []struct {
		name string
		do   func(c *Client) error
		op   uint16
		want []attr
	}{
		{"link add", func(c *Client) error { return c.NewLink("rxe9", "rxe", "veth9") }, cmdNewLink,
			[]attr{{attrDevName, []byte("rxe9\x00")}, {attrLinkType, []byte("rxe\x00")}, {attrNdevName, []byte("veth9\x00")}}},
		{"link delete", func(c *Client) error { return c.DelLink(3) }, cmdDelLink, []attr{{attrDevIndex, u32b(3)}}},
		{"dev set name", func(c *Client) error { return c.Rename(1, "foo") }, cmdSet,
			[]attr{{attrDevIndex, u32b(1)}, {attrDevName, []byte("foo\x00")}}},
		{"dev set netns", func(c *Client) error { return c.SetNetns(1, 7) }, cmdSet,
			[]attr{{attrDevIndex, u32b(1)}, {attrNetNSFD, u32b(7)}}},
		{"dev set adaptive-moderation on", func(c *Client) error { return c.SetDIM(1, true) }, cmdSet,
			[]attr{{attrDevIndex, u32b(1)}, {attrDevDIM, []byte{1}}}},
		{"system set netns exclusive", func(c *Client) error { return c.SetNetnsMode(false) }, cmdSysSet,
			[]attr{{attrSysNetnsMode, []byte{0}}}},
		{"system set privileged-qkey on", func(c *Client) error { return c.SetPrivilegedQKey(true) }, cmdSysSet,
			[]attr{{attrSysPrivQKeyMode, []byte{1}}}},
		{"qp set auto type on", func(c *Client) error { return c.SetQPAutoMode(0, 1, CounterMaskQPType, nil) }, cmdStatSet,
			[]attr{{attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrStatRes, u32b(attrResQP)}, {attrStatMode, u32b(CounterModeAuto)}, {attrStatAutoModeMask, u32b(1)}}},
		{"qp set auto type on optional-counters on", func(c *Client) error { return c.SetQPAutoMode(0, 1, CounterMaskQPType, &on) }, cmdStatSet,
			[]attr{{attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrStatRes, u32b(attrResQP)}, {attrStatMode, u32b(CounterModeAuto)}, {attrStatAutoModeMask, u32b(1)}, {attrStatOpCounterOn, []byte{1}}}},
		{"qp bind lqpn 5 cntn 4", func(c *Client) error { _, err := c.BindQP(0, 1, 5, &cntn); return err }, cmdStatSet,
			[]attr{{attrStatMode, u32b(CounterModeManual)}, {attrStatRes, u32b(attrResQP)}, {attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrResLQPN, u32b(5)}, {attrStatCounterID, u32b(4)}}},
		{"qp unbind cntn 4 lqpn 5", func(c *Client) error { return c.UnbindQP(0, 1, 4, 5) }, cmdStatDel,
			[]attr{{attrStatMode, u32b(CounterModeManual)}, {attrStatRes, u32b(attrResQP)}, {attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrStatCounterID, u32b(4)}, {attrResLQPN, u32b(5)}}},
		{"set optional-counters", func(c *Client) error { return c.SetOptionalCounters(0, 1, []uint32{3, 5}) }, cmdStatSet,
			[]attr{{attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrStatHWCounters, append(append([]byte{8, 0, attrStatHWCounterIndex, 0}, u32b(3)...), append([]byte{8, 0, attrStatHWCounterIndex, 0}, u32b(5)...)...)}}},
		{"unset optional-counters", func(c *Client) error { return c.SetOptionalCounters(0, 1, nil) }, cmdStatSet,
			[]attr{{attrDevIndex, u32b(0)}, {attrPortIndex, u32b(1)}, {attrStatHWCounters, []byte{}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, f := newFake(func(req message) ([]message, error) { return nil, nil })
			if err := tc.do(c); err != nil {
				t.Fatal(err)
			}
			if len(f.reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(f.reqs))
			}
			r := f.reqs[0]
			if r.Type != msgType(tc.op) || r.Flags != flagRequest|uint16(netlink.Acknowledge) {
				t.Errorf("type %#x flags %#x, want %#x and REQUEST|ACK", r.Type, r.Flags, msgType(tc.op))
			}
			got := attrList(r.Data)
			for i := range got {
				if len(got[i].data) == 0 {
					got[i].data = []byte{}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("attributes\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// The nested table of optional counters carries NLA_F_NESTED, as libmnl's
// mnl_attr_nest_start puts it.
func TestOptionalCountersNestedFlag(t *testing.T) {
	c, f := newFake(func(req message) ([]message, error) { return nil, nil })
	if err := c.SetOptionalCounters(0, 1, nil); err != nil {
		t.Fatal(err)
	}
	d := f.reqs[0].Data
	// DEV_INDEX (8 bytes), PORT_INDEX (8 bytes), then the nest header.
	if typ := binary.NativeEndian.Uint16(d[18:]); typ != attrStatHWCounters|nlaFNested {
		t.Fatalf("nest type %#x, want %#x", typ, attrStatHWCounters|nlaFNested)
	}
}

func TestWriteErrorsKeepErrno(t *testing.T) {
	for _, en := range []syscall.Errno{syscall.EPERM, syscall.EOPNOTSUPP, syscall.EBUSY, syscall.EEXIST, syscall.EINVAL} {
		c, _ := newFake(func(req message) ([]message, error) { return nil, en })
		err := c.SetNetnsMode(true)
		var ke *KernelError
		if !errors.As(err, &ke) || ke.Errno != en || ke.Op != "SYS_SET" || !errors.Is(err, en) {
			t.Errorf("%v: got %v", en, err)
		}
	}
}

// A write whose command answers (STAT_SET of a bind) reads through to the
// ack, so the next request on the socket gets its own answers.
func TestBindReadsAnswerThenAck(t *testing.T) {
	c, _ := newFake(func(req message) ([]message, error) {
		switch req.Type {
		case msgType(cmdStatSet):
			var e encoder
			e.u32(attrDevIndex, 0)
			e.str(attrDevName, "rxe0")
			e.u32(attrPortIndex, 1)
			e.u32(attrStatCounterID, 9)
			e.u32(attrResLQPN, 5)
			return []message{{Type: req.Type, Data: e.b}}, nil
		case msgType(cmdStatGet):
			return []message{{Type: req.Type, Data: qpModeMsg(CounterModeAuto, 1)}}, nil
		}
		return nil, syscall.EINVAL
	})
	id, err := c.BindQP(0, 1, 5, nil)
	if err != nil || id != 9 {
		t.Fatalf("BindQP: %d, %v", id, err)
	}
	m, err := c.QPCounterMode(0, 1)
	if err != nil || m.Mode != CounterModeAuto || m.Mask == nil || *m.Mask != 1 || m.DevName != "rxe0" {
		t.Fatalf("QPCounterMode after a bind: %+v, %v", m, err)
	}
}

func qpModeMsg(mode, mask uint32) []byte {
	var e encoder
	e.u32(attrDevIndex, 0)
	e.str(attrDevName, "rxe0")
	e.u32(attrPortIndex, 1)
	e.u32(attrStatMode, mode)
	if mode == CounterModeAuto {
		e.u32(attrStatAutoModeMask, mask)
		e.u8(attrStatOpCounterOn, 0)
	}
	return e.b
}

// qpCounterMsg is one message of the STAT_GET dump of QP counters, laid
// out as nldev.c's fill_res_counter_entry puts it.
func qpCounterMsg() []byte {
	var q1, q2 encoder
	q1.u32(attrResLQPN, 17)
	q2.u32(attrResLQPN, 18)
	var qps encoder
	qps.put(attrResQPEntry, q1.b)
	qps.put(attrResQPEntry, q2.b)
	var hw encoder
	var c1 encoder
	c1.str(attrStatHWCounterName, "rx_write_requests")
	c1.u64(attrStatHWCounterValue, 42)
	hw.put(attrStatHWCounterEntry, c1.b)
	var ent encoder
	ent.u32(attrPortIndex, 1)
	ent.u32(attrStatCounterID, 4)
	ent.u32(attrStatMode, CounterModeAuto)
	ent.u8(attrResType, 2)
	ent.put(attrResQP, qps.b)
	ent.put(attrStatHWCounters, hw.b)
	var tbl encoder
	tbl.put(attrStatCounterEntry, ent.b)
	var m encoder
	m.u32(attrDevIndex, 0)
	m.str(attrDevName, "mlx5_0")
	m.put(attrStatCounter, tbl.b)
	return m.b
}

func TestQPCountersDecode(t *testing.T) {
	c, f := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: qpCounterMsg()}}, nil
	})
	got, err := c.QPCounters(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d counters", len(got))
	}
	q := got[0]
	if q.DevName != "mlx5_0" || *q.Port != 1 || *q.ID != 4 || *q.Mode != CounterModeAuto || *q.QPType != 2 ||
		!reflect.DeepEqual(q.LQPNs, []uint32{17, 18}) || !reflect.DeepEqual(q.Counters, []Counter{{"rx_write_requests", 42}}) {
		t.Fatalf("%+v", q)
	}
	r := parseAttrs(f.reqs[0].Data)
	if f.reqs[0].Flags&flagDump != flagDump || *r.u32(attrStatRes) != attrResQP || *r.u32(attrPortIndex) != 1 {
		t.Fatalf("request %+v", f.reqs[0])
	}
}

func statusMsg() []byte {
	var hw encoder
	for i, n := range []string{"rx_pkts", "cc_rx_ce_pkts", "cc_rx_cnp_pkts"} {
		var c encoder
		c.str(attrStatHWCounterName, n)
		c.u32(attrStatHWCounterIndex, uint32(i))
		if i > 0 {
			c.u8(attrStatHWCounterDyn, uint8(i-1))
		}
		hw.put(attrStatHWCounterEntry, c.b)
	}
	var m encoder
	m.u32(attrDevIndex, 0)
	m.str(attrDevName, "mlx5_0")
	m.u32(attrPortIndex, 1)
	m.put(attrStatHWCounters, hw.b)
	return m.b
}

func TestCounterStatusDecode(t *testing.T) {
	c, _ := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: statusMsg()}}, nil
	})
	got, err := c.CounterStatus(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []CounterStatus{{"rx_pkts", 0, false, true}, {"cc_rx_ce_pkts", 1, true, false}, {"cc_rx_cnp_pkts", 2, true, true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func mrStatMsg() []byte {
	var e encoder
	e.u32(attrResMRN, 3)
	var hw, c1 encoder
	c1.str(attrStatHWCounterName, "page_faults")
	c1.u64(attrStatHWCounterValue, 7)
	hw.put(attrStatHWCounterEntry, c1.b)
	e.put(attrStatHWCounters, hw.b)
	return resMsg(1, "mlx5_1", nest(attrResMR, nest(attrResMREntry, e.b)))
}

func TestMRStatisticsDecode(t *testing.T) {
	c, _ := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: mrStatMsg()}}, nil
	})
	got, err := c.MRStatistics(1)
	if err != nil || len(got) != 1 || got[0].DevName != "mlx5_1" || *got[0].MRN != 3 || got[0].Counters[0].Value != 7 {
		t.Fatalf("%+v %v", got, err)
	}
}

// Seeds of the counter decoders: the messages above, and damaged ones.
func FuzzDecodeCounterReplies(f *testing.F) {
	for _, s := range [][]byte{qpCounterMsg(), statusMsg(), mrStatMsg(), qpModeMsg(CounterModeAuto, 3), qpModeMsg(CounterModeNone, 0), {}, {4, 0}, qpCounterMsg()[:37]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeQPCounters(b)
		decodeQPCounterEntry(0, "x", parseAttrs(b))
		decodeCounterStatus(b)
		decodeMRStats(b)
		decodeQPMode(b)
	})
}
