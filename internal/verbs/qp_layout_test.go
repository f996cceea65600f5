package verbs

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// TestQPLayoutAgainstC compiles testdata/layout/qp_layout.c with gcc
// (testexec.BuildC) against the system's UAPI headers and compares every
// offset and size it prints with the Go declarations (qp_abi.go structs and
// the command and opcode numbers). Without gcc it fails, as the other oracles do.
func TestQPLayoutAgainstC(t *testing.T) {
	goStructs := map[string]reflect.Type{
		"ib_uverbs_create_cq":       reflect.TypeFor[abiCreateCQ](),
		"ib_uverbs_create_cq_resp":  reflect.TypeFor[abiCreateCQResp](),
		"ib_uverbs_destroy_cq":      reflect.TypeFor[abiDestroyCQ](),
		"ib_uverbs_destroy_cq_resp": reflect.TypeFor[abiDestroyCQResp](),
		"ib_uverbs_create_qp":       reflect.TypeFor[abiCreateQP](),
		"ib_uverbs_create_qp_resp":  reflect.TypeFor[abiCreateQPResp](),
		"ib_uverbs_destroy_qp":      reflect.TypeFor[abiDestroyQP](),
		"ib_uverbs_destroy_qp_resp": reflect.TypeFor[abiDestroyQPResp](),
		"ib_uverbs_qp_dest":         reflect.TypeFor[abiQPDest](),
		"ib_uverbs_modify_qp":       reflect.TypeFor[abiModifyQP](),
		"ib_uverbs_query_qp":        reflect.TypeFor[abiQueryQP](),
		"ib_uverbs_query_qp_resp":   reflect.TypeFor[abiQueryQPResp](),
		"ib_uverbs_ah_attr":         reflect.TypeFor[abiAHAttr](),
		"ib_uverbs_global_route":    reflect.TypeFor[abiAHAttr](), // flattened at offset 0
		"ib_uverbs_create_ah":       reflect.TypeFor[abiCreateAH](),
		"ib_uverbs_create_ah_resp":  reflect.TypeFor[abiCreateAHResp](),
		"ib_uverbs_destroy_ah":      reflect.TypeFor[abiDestroyAH](),
		// mcast.go
		"ib_uverbs_attach_mcast": reflect.TypeFor[abiMcast](),
		"ib_uverbs_detach_mcast": reflect.TypeFor[abiMcast](),
		"ib_uverbs_wc":           reflect.TypeFor[WC](),
		// srq.go
		"ib_uverbs_create_srq":               reflect.TypeFor[abiCreateSRQ](),
		"ib_uverbs_create_srq_resp":          reflect.TypeFor[abiCreateSRQResp](),
		"ib_uverbs_destroy_srq":              reflect.TypeFor[abiDestroySRQ](),
		"ib_uverbs_destroy_srq_resp":         reflect.TypeFor[abiDestroySRQResp](),
		"ib_uverbs_create_comp_channel":      reflect.TypeFor[abiCreateCompChannel](),
		"ib_uverbs_create_comp_channel_resp": reflect.TypeFor[abiCreateCompChannelResp](),
		"ib_uverbs_req_notify_cq":            reflect.TypeFor[abiReqNotifyCQ](),
		"ib_uverbs_comp_event_desc":          reflect.TypeFor[abiCompEventDesc](),
	}
	rename := map[string]string{"ib_uverbs_global_route.reserved": "GRHReserved"}
	consts := map[string]uintptr{
		"IB_USER_VERBS_CMD_CREATE_SRQ":      uintptr(cmdCreateSRQ),
		"IB_USER_VERBS_CMD_DESTROY_SRQ":     uintptr(cmdDestroySRQ),
		"IB_UVERBS_WR_ATOMIC_CMP_AND_SWP":   uintptr(OpAtomicCmpSwap),
		"IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD": uintptr(OpAtomicFetchAdd),
	}

	checked := 0
	for _, fact := range testexec.LayoutFacts(t, "testdata/layout/qp_layout.c") {
		name, off, size := fact.Name, fact.Off, fact.Size
		if c, ok := consts[name]; ok {
			want := uintptr(off)
			if !strings.Contains(name, ".") {
				want = uintptr(size)
			}
			if c != want {
				t.Errorf("%s: Go has %d, C has %d", name, c, want)
			}
			checked++
			continue
		}
		sname, field, hasField := strings.Cut(name, ".")
		typ, ok := goStructs[sname]
		if !ok {
			t.Errorf("%s: no Go counterpart declared in the test", name)
			continue
		}
		if !hasField {
			if sname == "ib_uverbs_global_route" {
				typ = reflect.TypeFor[[24]byte]() // the first 24 bytes of abiAHAttr
			}
			if typ.Size() != uintptr(size) {
				t.Errorf("%s: Go size %d, C size %d", sname, typ.Size(), size)
			}
			checked++
			continue
		}
		goName := rename[name]
		if goName == "" {
			goName = strings.ReplaceAll(field, "_", "")
		}
		sf, ok := typ.FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, goName) })
		if !ok {
			t.Errorf("%s: Go type %v has no field like %q", name, typ, goName)
			continue
		}
		if sf.Offset != uintptr(off) || sf.Type.Size() != uintptr(size) {
			t.Errorf("%s: Go %s at %d size %d, C at %d size %d", name, sf.Name, sf.Offset, sf.Type.Size(), off, size)
		}
		checked++
	}
	if checked < 120 {
		t.Errorf("only %d layout facts compared", checked)
	}
}
