package resobj

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// TestFilterTables: a filter name has one kind on every object; DEV and
// --link are the dev and link filters; the tables' names are rdma's
// (res.h), in rdma's order, as rdmagrammar's abbreviations need them.
func TestFilterTables(t *testing.T) {
	kind := map[string]Kind{}
	for _, o := range Objects {
		for _, f := range o.Filters {
			if k, ok := kind[f.Name]; ok && k != f.Kind {
				t.Errorf("%s: filter %q is of kind %d here, %d elsewhere", o.Name, f.Name, f.Kind, k)
			}
			kind[f.Name] = f.Kind
			if (f.Name == "dev") != (f.Kind == KindDev) || (f.Name == "link") != (f.Kind == KindLink) || (f.Kind == KindIgnored) != (f.Why != "") {
				t.Errorf("%s: filter %+v", o.Name, f)
			}
		}
		if Lookup(o.Name) != o {
			t.Errorf("Lookup(%q)", o.Name)
		}
	}
	want := map[string]string{
		"qp":    "link lqpn rqpn pid sq-psn rq-psn type path-mig-state state pdn",
		"cq":    "dev users poll-ctx pid cqn ctxn",
		"mr":    "dev rkey lkey mrlen pid mrn pdn",
		"pd":    "dev users pid ctxn pdn",
		"cm_id": "link lqpn qp-type state ps dev-type transport-type pid src-addr src-port dst-addr dst-port cm-idn",
		"ctx":   "dev pid ctxn",
		"srq":   "dev pid srqn type pdn cqn lqpn",
	}
	for name, w := range want {
		if got := strings.Join(Lookup(name).FilterNames(), " "); got != w {
			t.Errorf("%s filters %q, want %q", name, got, w)
		}
	}
	if n := len(AllFilters()); n != len(kind) {
		t.Errorf("AllFilters has %d, the tables %d names", n, len(kind))
	}
	if got := strings.Join(Names(), ","); got != "qp,cq,mr,pd,cm_id,ctx,srq" {
		t.Errorf("names %s", got)
	}
}

// fakeSource lists one object of each kind.
type fakeSource struct{}

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

func u8(v uint8) *uint8 { return &v }

var rxe0, rxe1 = nldev.ResHead{DevIndex: 0, DevName: "rxe0"}, nldev.ResHead{DevIndex: 1, DevName: "rxe1"}
var kernelOwned = inventory.Owner{Comm: "ib_core", Kernel: true}
var userOwned = inventory.Owner{PID: u32(244), Comm: "ibv_rc_pingpong"}

func (fakeSource) ResSummaries(string) ([]nldev.Summary, error) {
	return []nldev.Summary{{DevIndex: 0, DevName: "rxe0", Counts: map[string]uint64{"pd": 1, "qp": 2, "cm_id": 3}}}, nil
}
func (fakeSource) QPs(inventory.ResFilter) ([]inventory.QP, error) {
	rc, gsi, initState, rts, migrated := u8(2), u8(1), u8(1), u8(3), u8(0)
	return []inventory.QP{
		{QP: nldev.QP{ResHead: rxe0, Port: u32(1), LQPN: u32(18), RQPN: u32(0), Type: rc, State: initState, RQPSN: u32(0), SQPSN: u32(0), PathMigState: migrated, PDN: u32(2)}, Owner: userOwned},
		{QP: nldev.QP{ResHead: rxe1, Port: u32(1), LQPN: u32(1), Type: gsi, State: rts, SQPSN: u32(0)}, Owner: kernelOwned},
	}, nil
}
func (fakeSource) CQs(inventory.ResFilter) ([]inventory.CQ, error) {
	b, workqueue := true, u8(2)
	return []inventory.CQ{{CQ: nldev.CQ{ResHead: rxe0, CQN: u32(3), CQE: u32(255), Users: u64(1), PollCtx: workqueue, DIM: &b, CtxN: u32(4)}, Owner: userOwned}}, nil
}
func (fakeSource) MRs(inventory.ResFilter) ([]inventory.MR, error) {
	return []inventory.MR{{MR: nldev.MR{ResHead: rxe0, MRN: u32(5), RKey: u32(0x1234), LKey: u32(0x1234), IOVA: u64(0x7f0000001000), Len: u64(4096), PDN: u32(2)}, Owner: userOwned}}, nil
}
func (fakeSource) PDs(inventory.ResFilter) ([]inventory.PD, error) {
	return []inventory.PD{{PD: nldev.PD{ResHead: rxe0, PDN: u32(2), LocalDMALKey: u32(0), Users: u64(4), CtxN: u32(4)}, Owner: userOwned}}, nil
}
func (fakeSource) CMIDs(inventory.ResFilter) ([]inventory.CMID, error) {
	rc, listen, tcp := u8(2), u8(8), u32(0x0106)
	return []inventory.CMID{{CMID: nldev.CMID{ResHead: rxe0, CMIDN: u32(7), QPType: rc, State: listen, PS: tcp, SrcAddr: netip.MustParseAddrPort("10.77.0.1:18515")}, Owner: userOwned}}, nil
}
func (fakeSource) Contexts(inventory.ResFilter) ([]inventory.Ctx, error) {
	return []inventory.Ctx{{Ctx: nldev.Ctx{ResHead: rxe0, CtxN: u32(4)}, Owner: userOwned}}, nil
}
func (fakeSource) SRQs(inventory.ResFilter) ([]inventory.SRQ, error) {
	basic := u8(0)
	return []inventory.SRQ{{SRQ: nldev.SRQ{ResHead: rxe0, SRQN: u32(1), Type: basic, PDN: u32(2), CQN: u32(3),
		QPs: []nldev.QPRange{{Min: 17, Max: 17}, {Min: 19, Max: 32}}}, Owner: userOwned}}, nil
}

// TestRows: each object's JSON keys and table cells, as res prints them.
func TestRows(t *testing.T) {
	want := map[string]struct{ json, cells string }{
		"": {`{"ifindex":0,"ifname":"rxe0","pd":1,"cq":0,"qp":2,"cm_id":3,"mr":0,"ctx":0,"srq":0}`, `[0 rxe0 1 0 2 3 0 0 0]`},
		"qp": {`{"ifindex":0,"ifname":"rxe0","port":1,"lqpn":18,"rqpn":0,"type":"RC","state":"INIT","rq_psn":0,"sq_psn":0,"path_mig_state":"MIGRATED","pdn":2,"pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0/1 18 0 RC INIT 0 0 MIGRATED 2 244 ibv_rc_pingpong]`},
		"cq": {`{"ifindex":0,"ifname":"rxe0","cqn":3,"cqe":255,"users":1,"poll_ctx":"WORKQUEUE","adaptive_moderation":true,"ctxn":4,"pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0 3 255 1 WORKQUEUE on 4 244 ibv_rc_pingpong]`},
		"mr": {`{"ifindex":0,"ifname":"rxe0","mrn":5,"rkey":4660,"lkey":4660,"iova":139637976731648,"mrlen":4096,"pdn":2,"pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0 5 0x1234 0x1234 0x7f0000001000 4096 2 244 ibv_rc_pingpong]`},
		"pd": {`{"ifindex":0,"ifname":"rxe0","pdn":2,"local_dma_lkey":0,"users":4,"ctxn":4,"pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0 2 0x0 4 <nil> 4 244 ibv_rc_pingpong]`},
		"cm_id": {`{"ifindex":0,"ifname":"rxe0","cm_idn":7,"qp_type":"RC","state":"LISTEN","ps":"TCP","src_addr":"10.77.0.1:18515","pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0/- 7 <nil> RC LISTEN TCP 10.77.0.1:18515  244 ibv_rc_pingpong]`},
		"ctx": {`{"ifindex":0,"ifname":"rxe0","ctxn":4,"pid":244,"comm":"ibv_rc_pingpong"}`, `[rxe0 4 244 ibv_rc_pingpong]`},
		"srq": {`{"ifindex":0,"ifname":"rxe0","srqn":1,"type":"BASIC","lqpn":["17","19-32"],"pdn":2,"cqn":3,"pid":244,"comm":"ibv_rc_pingpong"}`,
			`[rxe0 1 BASIC 17,19-32 2 3 244 ibv_rc_pingpong]`},
	}
	for name, w := range want {
		o := Summary
		if name != "" {
			o = Lookup(name)
		}
		rows, err := o.Rows(fakeSource{}, inventory.ResFilter{}, Match{})
		if err != nil || len(rows) == 0 {
			t.Fatalf("%q: %v, %d rows", name, err, len(rows))
		}
		b, _ := json.Marshal(rows[0].JSON)
		if string(b) != w.json {
			t.Errorf("%q JSON\n got %s\nwant %s", name, b, w.json)
		}
		if got := fmt.Sprint(rows[0].Cells); got != w.cells {
			t.Errorf("%q cells\n got %s\nwant %s", name, got, w.cells)
		}
		if len(rows[0].Cells) != len(o.Columns) {
			t.Errorf("%q: %d cells for %d columns", name, len(rows[0].Cells), len(o.Columns))
		}
	}
	// A kernel-owned object: the module in brackets in the table, bare in JSON.
	rows, _ := Lookup("qp").Rows(fakeSource{}, inventory.ResFilter{}, Match{})
	if c := rows[1].Cells[len(rows[1].Cells)-1]; c != "[ib_core]" {
		t.Errorf("kernel QP's comm cell %v", c)
	}
	// The match drops what it does not select.
	var m Match
	if err := m.SetNum("lqpn", "1"); err != nil {
		t.Fatal(err)
	}
	if rows, _ := Lookup("qp").Rows(fakeSource{}, inventory.ResFilter{}, m); len(rows) != 1 || rows[0].Cells[1] != uint32(1) {
		t.Errorf("lqpn 1: %v", rows)
	}
}
