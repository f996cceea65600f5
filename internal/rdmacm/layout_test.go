package rdmacm

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
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

// TestLayout compiles testdata/layout.c against /usr/include/rdma and
// compares every size and offset it prints with the Go structs, and checks
// that every Go field has a C counterpart.
func TestLayout(t *testing.T) {
	if _, err := os.Stat("/usr/include/rdma/rdma_user_cm.h"); err != nil {
		t.Fatalf("the UAPI headers are needed (Debian: linux-libc-dev): %v", err)
	}
	out, err := oracle(t, "testdata/layout.c").Output()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		var name, key string
		var want uint64
		switch len(f) {
		case 3:
			name, key = f[0], "size"
			want, _ = strconv.ParseUint(f[2], 10, 64)
		case 2:
			var ok bool
			if name, key, ok = strings.Cut(f[0], "."); !ok {
				t.Fatalf("bad line %q", sc.Text())
			}
			want, _ = strconv.ParseUint(f[1], 10, 64)
		default:
			t.Fatalf("bad line %q", sc.Text())
		}
		typ, ok := layoutTypes[name]
		if !ok {
			t.Errorf("layout.c prints %s, which layoutTypes lacks", name)
			continue
		}
		seen[name] = true
		if key == "size" {
			if got := uint64(typ.Size()); got != want {
				t.Errorf("sizeof(%s) = %d, Go %s is %d", name, want, typ.Name(), got)
			}
			continue
		}
		sf, ok := fieldByNorm(typ, key)
		if !ok {
			t.Errorf("%s.%s has no Go field in %s", name, key, typ.Name())
			continue
		}
		seen[name+"."+sf.Name] = true
		if uint64(sf.Offset) != want {
			t.Errorf("offsetof(%s, %s) = %d, Go %s.%s is at %d", name, key, want, typ.Name(), sf.Name, sf.Offset)
		}
	}
	for name, typ := range layoutTypes {
		if !seen[name] {
			t.Errorf("layout.c does not print %s", name)
			continue
		}
		for i := 0; i < typ.NumField(); i++ {
			if k := name + "." + typ.Field(i).Name; !seen[k] {
				t.Errorf("Go field %s.%s is not checked against C", typ.Name(), typ.Field(i).Name)
			}
		}
	}
}

func fieldByNorm(typ reflect.Type, cname string) (reflect.StructField, bool) {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	for i := 0; i < typ.NumField(); i++ {
		if norm(typ.Field(i).Name) == norm(cname) {
			return typ.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// oracle builds a C program with $CC and returns the command that runs
// it (package testexec).
func oracle(t *testing.T, src string) *exec.Cmd {
	t.Helper()
	return testexec.Command(testexec.BuildC(t, src, "-Wall", "-Werror"))
}
