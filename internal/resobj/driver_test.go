package resobj

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/render"
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
		Head
		CQN *uint32 `json:"cqn,omitempty"`
		CQE *uint32 `json:"cqe,omitempty"`
	}{Head: Head{Ifindex: 0, Ifname: "hns_0"}, CQN: &cqn, CQE: &cqe}
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
	if got := Lookup("ctx").Header(false); !reflect.DeepEqual(got, []string{"DEV", "CTXN", "PID", "COMM"}) {
		t.Errorf("header %v", got)
	}
	if got := Lookup("ctx").Header(true); !reflect.DeepEqual(got, []string{"DEV", "CTXN", "PID", "COMM", "DRIVER"}) {
		t.Errorf("header %v", got)
	}
	if got := Summary.Header(true); got[len(got)-1] == "DRIVER" {
		t.Errorf("the counts have no driver column: %v", got)
	}
	if got := (Row{Cells: []any{1}, counts: true}).TableCells(true); len(got) != 1 {
		t.Errorf("a count row under -dd: %v", got)
	}
	if got := driverCells(false, hnsCQDriver, "hns_0"); len(got) != 1 {
		t.Errorf("cells %v", got)
	}
	got := driverCells(true, hnsCQDriver[:4], "hns_0")
	if want := "cq_depth 256 cons-index 0xbeef big 9223372036854775809 neg -2"; len(got) != 2 || got[1] != want {
		t.Errorf("driver cell %q, want %q", got[1], want)
	}
	if got := driverCells(true, nil, "rxe0"); len(got) != 2 || got[1] != "" {
		t.Errorf("no details: %q", got)
	}
}

// TestRawObjects: the objects res -r offers are those nldev has raw dumps
// of.
func TestRawObjects(t *testing.T) {
	for _, o := range Objects {
		if o.Raw != nldev.RawObjects(o.Name) {
			t.Errorf("%s: Raw %v, nldev %v", o.Name, o.Raw, nldev.RawObjects(o.Name))
		}
	}
}
