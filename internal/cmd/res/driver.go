package res

import (
	"encoding/hex"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/resobj"
)

// rdma's -r on res: raw dumps. (-dd's driver details: internal/resobj.)

// resRawJSON is one object of -j -r, as rdma -j -r prints it: the device,
// the port when the kernel gives one, and the bytes as numbers.
type resRawJSON struct {
	resobj.Head
	Port *uint32 `json:"port,omitempty"`
	Data []int   `json:"data"`
}

// runResRaw is 'res OBJ -r': the driver's raw image of each object. rdma
// -r prints the bytes as decimals run together in its text output; the
// table here shows them as one hex string per object instead.
func runResRaw(a *cmdutil.App, obj, dev, linkFlag string, set []string) error {
	if o := resobj.Lookup(obj); o == nil || !o.Raw {
		if obj == "" {
			return cmdutil.UsageErrorf("-r (raw) needs an object: qp, cq, mr or srq, as in 'rdmactl -r res qp'")
		}
		return cmdutil.UsageErrorf("-r (raw): the kernel has raw dumps of qp, cq, mr and srq only, not %s", obj)
	}
	for _, k := range set {
		if k != "link" {
			return cmdutil.UsageErrorf("-r (raw) with --%s: raw objects have no fields to filter on; only DEV and --link apply", k)
		}
	}
	var port uint32
	if linkFlag != "" {
		ldev, p, err := cmdutil.ParseDevPort(linkFlag)
		if err != nil {
			return err
		}
		if dev != "" && dev != ldev {
			return cmdutil.UsageErrorf("res %s %s --link %s: two different devices", obj, dev, linkFlag)
		}
		dev, port = ldev, p
	}
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return err
	}
	defer closeSrc()
	ents, err := src.Raw(obj, inventory.ResFilter{Dev: dev}, port)
	if err != nil {
		return rawRefusal(obj, err)
	}
	rows := []any{}
	head := "DEV"
	if obj == "qp" {
		head = "LINK"
	}
	tbl := render.NewTable(a.Stdout, head, "DATA")
	for _, e := range ents {
		r := resRawJSON{Head: resobj.Head{Ifindex: e.DevIndex, Ifname: e.DevName}, Port: e.Port, Data: make([]int, len(e.Data))}
		for i, v := range e.Data {
			r.Data[i] = int(v)
		}
		rows = append(rows, r)
		where := e.DevName
		if obj == "qp" {
			where = resobj.Link(e.DevName, e.Port)
		}
		tbl.Row(where, hex.EncodeToString(e.Data))
	}
	if a.Opts.JSON {
		return a.PrintJSON(rows)
	}
	return tbl.Flush()
}

// rawRefusal explains the kernel's refusal of a raw dump, exit 5. The
// kernel answers EINVAL both for a driver without raw dumps (on its first
// object; rdma -r fails with the same "Invalid argument") and for a
// command it does not know (RDMA netlink checks the op against its table:
// 6.1 has no SRQ raw dump), so the line names both.
func rawRefusal(obj string, err error) error {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
		return cmdutil.WithCode(cmdutil.ExitUnsupported, fmt.Errorf("res %s -r: %w: no raw dump of %s objects here: the device's driver has none (mlx5 has them, rxe and siw do not), or the kernel lacks the command (QP, CQ, MR since Linux 5.9; SRQ after 6.1); rdma -r is refused the same way", obj, err, obj))
	}
	return err
}
