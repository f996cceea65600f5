package res

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/resobj"
)

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
		code, msg := cmdutil.ExitStatus(rawRefusal("qp", kerr(en)))
		if code != cmdutil.ExitUnsupported || !strings.Contains(msg, want) || !strings.Contains(msg, en.Error()) || strings.Contains(msg, "\n") {
			t.Errorf("%v: exit %d %q", en, code, msg)
		}
	}
	other := errors.New("boom")
	if rawRefusal("qp", other) != other {
		t.Error("other errors pass through")
	}
}
