package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/resobj"
)

var hnsCQDriver = []nldev.DriverAttr{
	{Key: "cq_depth", Kind: nldev.DriverU32, Uint: 256},
	{Key: "cons-index", Kind: nldev.DriverU32, Hex: true, Uint: 0xbeef},
	{Key: "big", Kind: nldev.DriverU64, Uint: 1<<63 + 1},
	{Key: "neg", Kind: nldev.DriverS32, Int: -2},
	{Key: "state", Kind: nldev.DriverString, Str: "idle"},
	{Key: "cq_depth", Kind: nldev.DriverU32, Uint: 7}, // sent twice: the first wins
}

// TestDriverJSON: -dd -j adds drv_KEY keys after the object's own, in the
// kernel's order, snake_case, with exact values; without -dd, or without
// driver details, the object is unchanged.
func TestDriverJSON(t *testing.T) {
	cqn, cqe := uint32(3), uint32(255)
	// A CQ's JSON as resobj makes it: the head, then its own keys.
	row := struct {
		resobj.Head
		CQN *uint32 `json:"cqn,omitempty"`
		CQE *uint32 `json:"cqe,omitempty"`
	}{Head: resobj.Head{Ifindex: 0, Ifname: "hns_0"}, CQN: &cqn, CQE: &cqe}
	plain, _ := json.Marshal(row)
	for _, v := range []any{withDriver(false, row, hnsCQDriver), withDriver(true, row, nil)} {
		if b, _ := json.Marshal(v); !bytes.Equal(b, plain) {
			t.Errorf("without -dd or details: %s, want %s", b, plain)
		}
	}
	b, err := json.Marshal(withDriver(true, row, hnsCQDriver))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ifindex":0,"ifname":"hns_0","cqn":3,"cqe":255,"drv_cq_depth":256,"drv_cons_index":48879,"drv_big":9223372036854775809,"drv_neg":-2,"drv_state":"idle"}`
	if string(b) != want {
		t.Errorf("-dd JSON\n got %s\nwant %s", b, want)
	}
	// Through the renderer, compact and -p.
	for _, pretty := range []bool{false, true} {
		var out bytes.Buffer
		if err := render.JSON(&out, []any{withDriver(true, row, hnsCQDriver)}, pretty); err != nil {
			t.Fatal(err)
		}
		var got []map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 1 || got[0]["drv_state"] != "idle" {
			t.Errorf("pretty %v: %s %v", pretty, out.String(), err)
		}
	}
	// An empty object gets no leading comma.
	if b, _ := json.Marshal(driverRow{struct{}{}, hnsCQDriver[:1]}); string(b) != `{"drv_cq_depth":256}` {
		t.Errorf("empty object: %s", b)
	}
}

func TestDriverTable(t *testing.T) {
	if got := resHeader(false, "DEV"); !reflect.DeepEqual(got, []string{"DEV"}) {
		t.Errorf("header %v", got)
	}
	if got := resHeader(true, "DEV"); !reflect.DeepEqual(got, []string{"DEV", "DRIVER"}) {
		t.Errorf("header %v", got)
	}
	if got := resCells(false, hnsCQDriver, "hns_0"); len(got) != 1 {
		t.Errorf("cells %v", got)
	}
	got := resCells(true, hnsCQDriver[:4], "hns_0")
	if want := "cq_depth 256 cons-index 0xbeef big 9223372036854775809 neg -2"; len(got) != 2 || got[1] != want {
		t.Errorf("driver cell %q, want %q", got[1], want)
	}
	if got := resCells(true, nil, "rxe0"); len(got) != 2 || got[1] != "" {
		t.Errorf("no details: %q", got)
	}
}

// TestRawJSONAndRefusal: -r -j objects are rdma's {"ifindex", "ifname",
// "port", "data": [bytes]}; the kernel's EINVAL and EOPNOTSUPP are exit 5
// with one line naming what is missing.
func TestRawJSONAndRefusal(t *testing.T) {
	p := uint32(1)
	b, _ := json.Marshal(resRawJSON{Head: resobj.Head{Ifindex: 7, Ifname: "mlx5_1"}, Port: &p, Data: []int{0, 255}})
	if string(b) != `{"ifindex":7,"ifname":"mlx5_1","port":1,"data":[0,255]}` {
		t.Errorf("raw JSON %s", b)
	}
	kerr := func(en syscall.Errno) error {
		return fmt.Errorf("rxe0: %w", &nldev.KernelError{Op: "RES_QP_GET_RAW", Errno: en})
	}
	for en, want := range map[syscall.Errno]string{syscall.EINVAL: "no raw dump of qp objects here", syscall.EOPNOTSUPP: "no raw dump of qp objects here"} {
		code, msg := exitStatus(rawRefusal("qp", kerr(en)))
		if code != exitUnsupported || !strings.Contains(msg, want) || !strings.Contains(msg, en.Error()) || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d %q", en, code, msg)
		}
	}
	other := errors.New("boom")
	if rawRefusal("qp", other) != other {
		t.Error("other errors pass through")
	}
}
