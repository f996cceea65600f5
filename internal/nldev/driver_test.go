package nldev

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
)

// driverTable is a DRIVER table as the kernel's rdma_nl_put_driver_*
// build it: key, optional print type, value (flat, no per-entry nest).
func driverTable() []byte {
	var d encoder
	d.str(attrDriverString, "cq_depth") // hns_roce_fill_res_cq_entry's first
	d.u32(attrDriverU32, 256)
	d.str(attrDriverString, "cons_index")
	d.u8(attrDriverPrintType, 1) // rdma_nl_put_driver_u32_hex
	d.u32(attrDriverU32, 0xbeef)
	d.str(attrDriverString, "arm_sn")
	d.u32(attrDriverS32, uint32(0xfffffffe)) // -2
	d.str(attrDriverString, "sq_base")
	d.u8(attrDriverPrintType, 1)
	d.u64(attrDriverU64, 1<<40)
	d.str(attrDriverString, "delta")
	d.u64(attrDriverS64, ^uint64(0)) // -1
	d.str(attrDriverString, "state")
	d.str(attrDriverString, "idle") // rdma_nl_put_driver_string
	return nest(attrDriver, d.b)
}

var wantDriver = []DriverAttr{
	{Key: "cq_depth", Kind: DriverU32, Uint: 256},
	{Key: "cons_index", Kind: DriverU32, Hex: true, Uint: 0xbeef},
	{Key: "arm_sn", Kind: DriverS32, Int: -2},
	{Key: "sq_base", Kind: DriverU64, Hex: true, Uint: 1 << 40},
	{Key: "delta", Kind: DriverS64, Int: -1},
	{Key: "state", Kind: DriverString, Str: "idle"},
}

func TestDecodeDriver(t *testing.T) {
	var cq encoder
	cq.u32(attrResCQN, 3)
	cq.u32(attrResCQE, 255)
	cq.u64(attrResUseCnt, 1)
	cq.b = append(cq.b, driverTable()...)
	c, _ := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: resMsg(0, "hns_0", nest(attrResCQ, nest(attrResCQEntry, cq.b)))}}, nil
	})
	cqs, err := c.CQsOf([]Device{{Index: 0, Name: "hns_0"}})
	if err != nil || len(cqs) != 1 {
		t.Fatalf("cqs %+v %v", cqs, err)
	}
	if !reflect.DeepEqual(cqs[0].Driver, wantDriver) {
		t.Fatalf("driver\n got %+v\nwant %+v", cqs[0].Driver, wantDriver)
	}
	var text []string
	var vals []any
	for _, d := range cqs[0].Driver {
		text = append(text, d.Text())
		vals = append(vals, d.Value())
	}
	// As rdma -dd prints them (utils.c print_driver_*): decimal, or 0x%x
	// for the hex print type; the s32's hex is its 32-bit pattern.
	if want := []string{"256", "0xbeef", "-2", "0x10000000000", "-1", "idle"}; !reflect.DeepEqual(text, want) {
		t.Errorf("text %q, want %q", text, want)
	}
	if want := []any{uint64(256), uint64(0xbeef), int64(-2), uint64(1 << 40), int64(-1), "idle"}; !reflect.DeepEqual(vals, want) {
		t.Errorf("values %#v, want %#v", vals, want)
	}
	if d := (DriverAttr{Kind: DriverS32, Int: -2, Hex: true}); d.Text() != "0xfffffffe" {
		t.Errorf("hex s32 %q", d.Text())
	}
	if d := (DriverAttr{Kind: DriverS64, Int: -1, Hex: true}); d.Text() != "0xffffffffffffffff" {
		t.Errorf("hex s64 %q", d.Text())
	}
	// No table: nil, as on rxe.
	if d := decodeDriver(parseAttrs(cq.b[:28])); d != nil {
		t.Errorf("no table: %+v", d)
	}
}

// TestDecodeDriverMalformed: an item out of place ends the table there,
// keeping what came before (rdma's print_driver_table stops the same way).
func TestDecodeDriverMalformed(t *testing.T) {
	cases := []struct {
		name  string
		build func(d *encoder)
		want  int
	}{
		{"value first", func(d *encoder) { d.u32(attrDriverU32, 1) }, 0},
		{"u32 of 8 bytes", func(d *encoder) {
			d.str(attrDriverString, "a")
			d.u32(attrDriverU32, 1)
			d.str(attrDriverString, "b")
			d.u64(attrDriverU32, 1)
		}, 1},
		{"unknown type", func(d *encoder) {
			d.str(attrDriverString, "a")
			d.u32(attrDevIndex, 1)
		}, 0},
		{"key without value", func(d *encoder) {
			d.str(attrDriverString, "a")
			d.u32(attrDriverU32, 1)
			d.str(attrDriverString, "b")
		}, 1},
		{"pad skipped", func(d *encoder) {
			d.str(attrDriverString, "a")
			d.put(attrPad, nil)
			d.u64(attrDriverU64, 7)
		}, 1},
	}
	for _, tc := range cases {
		var d encoder
		tc.build(&d)
		got := decodeDriver(parseAttrs(nest(attrDriver, d.b)))
		if len(got) != tc.want {
			t.Errorf("%s: %d attributes %+v, want %d", tc.name, len(got), got, tc.want)
		}
	}
}

// TestDriverDetailsRequest: with SetDriverDetails, resource dumps and the
// summary carry DRIVER_DETAILS=1 before DEV_INDEX, as iproute2's rdma -dd
// sends them; without it, the request is as before (DEV_INDEX only).
func TestDriverDetailsRequest(t *testing.T) {
	c, f := newFake(func(req message) ([]message, error) { return nil, nil })
	devs := []Device{{Index: 3, Name: "rxe0"}}
	if _, err := c.QPsOf(devs); err != nil {
		t.Fatal(err)
	}
	c.SetDriverDetails(true)
	if _, err := c.QPsOf(devs); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResourceSummary(); err != nil {
		t.Fatal(err)
	}
	var plain, dd, sum encoder
	plain.u32(attrDevIndex, 3)
	dd.u8(attrDriverDetails, 1)
	dd.u32(attrDevIndex, 3)
	sum.u8(attrDriverDetails, 1)
	if len(f.reqs) != 3 || !reflect.DeepEqual(f.reqs[0].Data, plain.b) || !reflect.DeepEqual(f.reqs[1].Data, dd.b) || !reflect.DeepEqual(f.reqs[2].Data, sum.b) {
		t.Fatalf("requests %+v", f.reqs)
	}
}

func rawDumpMsg(idx uint32, name string, port uint32, data ...[]byte) []byte {
	var ents [][]byte
	for _, d := range data {
		var e encoder
		if port != 0 {
			e.u32(attrPortIndex, port)
		}
		e.put(attrResRaw, d)
		ents = append(ents, nest(attrResQPEntry, e.b))
	}
	return resMsg(idx, name, nest(attrResQP, ents...))
}

// TestRawOf: one RES_*_GET_RAW dump per device with DEV_INDEX (and
// PORT_INDEX for a port), REQUEST|ACK|DUMP as rdma -r sends it; the blob
// comes back whole; the kernel's EINVAL (a driver without raw dumps) is a
// *KernelError naming the device and the command.
func TestRawOf(t *testing.T) {
	blob := []byte{0, 1, 2, 0xfe, 0xff}
	c, f := newFake(func(req message) ([]message, error) {
		idx := *parseAttrs(req.Data).u32(attrDevIndex)
		if idx == 1 {
			return nil, syscall.EINVAL
		}
		return []message{{Type: req.Type, Data: rawDumpMsg(idx, "mlx5_0", 1, blob, blob[:1])}}, nil
	})
	got, err := c.RawOf("qp", []Device{{Index: 0, Name: "mlx5_0"}}, 1)
	if err != nil || len(got) != 2 || !reflect.DeepEqual(got[0].Data, blob) || *got[0].Port != 1 || got[0].DevName != "mlx5_0" {
		t.Fatalf("raw %+v %v", got, err)
	}
	var want encoder
	want.u32(attrDevIndex, 0)
	want.u32(attrPortIndex, 1)
	r := f.reqs[0]
	if r.Type != msgType(cmdResQPGetRaw) || r.Flags != flagRequest|uint16(netlink.Acknowledge)|flagDump || !reflect.DeepEqual(r.Data, want.b) {
		t.Errorf("request %+v, want type %#x attrs % x", r, msgType(cmdResQPGetRaw), want.b)
	}
	_, err = c.RawOf("cq", []Device{{Index: 1, Name: "rxe0"}}, 0)
	var ke *KernelError
	if !errors.As(err, &ke) || ke.Op != "RES_CQ_GET_RAW" || !errors.Is(err, syscall.EINVAL) || err.Error() != "rxe0: netlink RES_CQ_GET_RAW: invalid argument" {
		t.Errorf("refusal %v", err)
	}
	if last := f.reqs[len(f.reqs)-1]; len(last.Data) != 8 {
		t.Errorf("cq request without a port has %d bytes of attributes, want 8 (DEV_INDEX)", len(last.Data))
	}
	if _, err := c.RawOf("pd", nil, 0); err == nil || RawObjects("pd") || !RawObjects("srq") {
		t.Errorf("pd has no raw dump: err %v", err)
	}
}

// FuzzDecodeDriverRaw: driver tables and raw answers from anywhere never
// panic the decoders; every attribute decoded has a key and a kind.
func FuzzDecodeDriverRaw(f *testing.F) {
	var cq encoder
	cq.u32(attrResCQN, 3)
	cq.b = append(cq.b, driverTable()...)
	f.Add(resMsg(0, "hns_0", nest(attrResCQ, nest(attrResCQEntry, cq.b))))
	f.Add(rawDumpMsg(0, "mlx5_0", 1, []byte{1, 2, 3}))
	f.Add(driverTable())
	for _, s := range seedMsgs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, tbl := range [][2]uint16{{attrResQP, attrResQPEntry}, {attrResCQ, attrResCQEntry}} {
			decodeRes(b, tbl[0], tbl[1], func(h ResHead, a attrs) {
				for _, d := range h.Driver {
					if d.Kind > DriverU64 {
						t.Fatalf("kind %d", d.Kind)
					}
					_ = d.Text()
					_ = d.Value()
				}
			})
			decodeRaw(b, tbl[0], tbl[1])
		}
		for _, d := range decodeDriver(parseAttrs(b)) {
			_ = d.Text()
		}
	})
}
