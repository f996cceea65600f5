package verbs

import (
	"os"
	"reflect"
	"testing"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// layoutTypes maps each UAPI struct (by its C name) to its Go mirror in
// abi.go. testdata/layout/layout.c prints the C sizes and offsets.
var layoutTypes = map[string]reflect.Type{
	"ib_uverbs_cmd_hdr":              reflect.TypeFor[uvCmdHdr](),
	"ib_uverbs_ex_cmd_hdr":           reflect.TypeFor[uvExCmdHdr](),
	"ib_uverbs_ioctl_hdr":            reflect.TypeFor[uvIoctlHdr](),
	"ib_uverbs_attr":                 reflect.TypeFor[uvAttr](),
	"ib_uverbs_get_context":          reflect.TypeFor[uvGetContext](),
	"ib_uverbs_get_context_resp":     reflect.TypeFor[uvGetContextResp](),
	"ib_uverbs_query_device":         reflect.TypeFor[uvQueryDevice](),
	"ib_uverbs_query_device_resp":    reflect.TypeFor[uvQueryDeviceResp](),
	"ib_uverbs_ex_query_device":      reflect.TypeFor[uvExQueryDevice](),
	"ib_uverbs_odp_caps":             reflect.TypeFor[uvODPCaps](),
	"ib_uverbs_rss_caps":             reflect.TypeFor[uvRSSCaps](),
	"ib_uverbs_tm_caps":              reflect.TypeFor[uvTMCaps](),
	"ib_uverbs_cq_moderation_caps":   reflect.TypeFor[uvCQModerationCaps](),
	"ib_uverbs_ex_query_device_resp": reflect.TypeFor[uvExQueryDeviceResp](),
	"ib_uverbs_query_port":           reflect.TypeFor[uvQueryPort](),
	"ib_uverbs_query_port_resp":      reflect.TypeFor[uvQueryPortResp](),
	"ib_uverbs_query_port_resp_ex":   reflect.TypeFor[uvQueryPortRespEx](),
	"ib_uverbs_alloc_pd":             reflect.TypeFor[uvAllocPD](),
	"ib_uverbs_alloc_pd_resp":        reflect.TypeFor[uvAllocPDResp](),
	"ib_uverbs_dealloc_pd":           reflect.TypeFor[uvDeallocPD](),
	"ib_uverbs_reg_mr":               reflect.TypeFor[uvRegMR](),
	"ib_uverbs_reg_mr_resp":          reflect.TypeFor[uvRegMRResp](),
	"ib_uverbs_dereg_mr":             reflect.TypeFor[uvDeregMR](),
	"ib_uverbs_gid_entry":            reflect.TypeFor[uvGIDEntry](),
}

// goOnly are Go fields the 6.1 headers do not have: newer headers split
// query_port_resp_ex's reserved[6] into reserved[2] + active_speed_ex
// (include/uapi/rdma/ib_user_ioctl_verbs.h); the size check still covers
// them.
var goOnly = map[string]bool{
	"ib_uverbs_query_port_resp_ex.ActiveSpeedEx": true,
}

// TestLayout compiles testdata/layout/layout.c with gcc (testexec.BuildC) against the
// UAPI headers in /usr/include/rdma and compares every size and offset it
// prints with the Go structs, and every Go field with a C one.
func TestLayout(t *testing.T) {
	if _, err := os.Stat("/usr/include/rdma/ib_user_verbs.h"); err != nil {
		t.Fatalf("the UAPI headers are needed (Debian: linux-libc-dev): %v", err)
	}
	testexec.CheckStructs(t, "testdata/layout/layout.c", layoutTypes, goOnly)
}
