package rdmacm

import (
	"os"
	"reflect"
	"testing"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// layoutTypes maps each UAPI struct (C name) to its Go mirror in abi.go.
var layoutTypes = map[string]reflect.Type{
	"rdma_ucm_cmd_hdr":          reflect.TypeFor[cmdHdr](),
	"rdma_ucm_create_id":        reflect.TypeFor[createID](),
	"rdma_ucm_create_id_resp":   reflect.TypeFor[createIDResp](),
	"rdma_ucm_destroy_id":       reflect.TypeFor[destroyID](),
	"rdma_ucm_destroy_id_resp":  reflect.TypeFor[destroyIDResp](),
	"rdma_ucm_bind_ip":          reflect.TypeFor[bindIP](),
	"rdma_ucm_resolve_ip":       reflect.TypeFor[resolveIP](),
	"rdma_ucm_resolve_route":    reflect.TypeFor[resolveRoute](),
	"rdma_ucm_query":            reflect.TypeFor[query](),
	"rdma_ucm_query_route_resp": reflect.TypeFor[queryRouteResp](),
	"rdma_ucm_conn_param":       reflect.TypeFor[connParam](),
	"ib_uverbs_global_route":    reflect.TypeFor[uverbsGlobalRoute](),
	"ib_uverbs_ah_attr":         reflect.TypeFor[uverbsAHAttr](),
	"rdma_ucm_ud_param":         reflect.TypeFor[udParam](),
	"rdma_ucm_ece":              reflect.TypeFor[ece](),
	"rdma_ucm_connect":          reflect.TypeFor[connect](),
	"rdma_ucm_listen":           reflect.TypeFor[listen](),
	"rdma_ucm_accept":           reflect.TypeFor[accept](),
	"rdma_ucm_reject":           reflect.TypeFor[reject](),
	"rdma_ucm_disconnect":       reflect.TypeFor[disconnect](),
	"rdma_ucm_init_qp_attr":     reflect.TypeFor[initQPAttr](),
	"rdma_ucm_get_event":        reflect.TypeFor[getEvent](),
	"rdma_ucm_event_resp":       reflect.TypeFor[eventResp](),
	"rdma_ucm_set_option":       reflect.TypeFor[setOption](),
	"ib_uverbs_qp_attr":         reflect.TypeFor[uverbsQPAttr](),
}

// TestLayout compiles testdata/layout.c with gcc (testexec.BuildC) against the
// UAPI headers in /usr/include/rdma and compares every size and offset it
// prints with the Go structs, and every Go field with a C one.
func TestLayout(t *testing.T) {
	if _, err := os.Stat("/usr/include/rdma/rdma_user_cm.h"); err != nil {
		t.Fatalf("the UAPI headers are needed (Debian: linux-libc-dev): %v", err)
	}
	testexec.CheckStructs(t, "testdata/layout.c", layoutTypes, nil)
}
