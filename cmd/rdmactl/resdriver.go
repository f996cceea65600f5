package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/resobj"
)

// rdma's -dd and -r on res (driver details, raw dumps).
//
// JSON of -dd: each driver attribute is one more key of its object,
// "drv_" + the driver's name for it, as rdma -dd -j names them
// (print_driver_entry), hyphens turned into underscores like every other
// rdmactl key; in the kernel's order, after the object's own keys. Values
// are exact numbers, or strings for string attributes: rdma -j passes
// every number through print_int, which turns a u32 above 2^31 negative
// and cuts a u64 to 32 bits. A key the driver sends twice is printed once
// (the first). Text: one DRIVER column, "key value ..." with hex values as
// 0x%x where the driver asks for hex, as rdma's text.

// resHeader is a res table's header, with DRIVER last under -dd.
func resHeader(dd bool, h ...string) []string {
	if dd {
		return append(h, "DRIVER")
	}
	return h
}

// resCells is a res table row, with the driver's details last under -dd.
func resCells(dd bool, drv []nldev.DriverAttr, cells ...any) []any {
	if !dd {
		return cells
	}
	var parts []string
	for _, d := range drv {
		parts = append(parts, d.Key+" "+d.Text())
	}
	return append(cells, strings.Join(parts, " "))
}

// driverRow is a res object's JSON with its drv_* keys after its own.
type driverRow struct {
	row any
	drv []nldev.DriverAttr
}

func withDriver(dd bool, row any, drv []nldev.DriverAttr) any {
	if !dd || len(drv) == 0 {
		return row
	}
	return driverRow{row, drv}
}

func (r driverRow) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.row)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	var out bytes.Buffer
	out.Write(b[:len(b)-1])
	n := len(b) > 2 // the object already has keys
	seen := map[string]bool{}
	for _, d := range r.drv {
		k := "drv_" + strings.ReplaceAll(d.Key, "-", "_")
		if seen[k] {
			continue
		}
		seen[k] = true
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(d.Value())
		if err != nil {
			return nil, err
		}
		if n {
			out.WriteByte(',')
		}
		n = true
		out.Write(kb)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

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
func runResRaw(a *app, obj, dev, linkFlag string, set []string) error {
	if !nldev.RawObjects(obj) {
		if obj == "" {
			return usageErrorf("-r (raw) needs an object: qp, cq, mr or srq, as in 'rdmactl -r res qp'")
		}
		return usageErrorf("-r (raw): the kernel has raw dumps of qp, cq, mr and srq only, not %s", obj)
	}
	for _, k := range set {
		if k != "link" {
			return usageErrorf("-r (raw) with --%s: raw objects have no fields to filter on; only DEV and --link apply", k)
		}
	}
	var port uint32
	if linkFlag != "" {
		ldev, p, err := parseDevPort(linkFlag)
		if err != nil {
			return err
		}
		if dev != "" && dev != ldev {
			return usageErrorf("res %s %s --link %s: two different devices", obj, dev, linkFlag)
		}
		dev, port = ldev, p
	}
	src, closeSrc, err := a.openInventory(false)
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
	tbl := newTable(a.stdout, head, "DATA")
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
		tbl.row(where, hex.EncodeToString(e.Data))
	}
	if a.opts.json {
		return a.printJSON(rows)
	}
	return tbl.render()
}

// rawRefusal explains the kernel's refusal of a raw dump, exit 5. The
// kernel answers EINVAL both for a driver without raw dumps (on its first
// object; rdma -r fails with the same "Invalid argument") and for a
// command it does not know (RDMA netlink checks the op against its table:
// 6.1 has no SRQ raw dump), so the line names both.
func rawRefusal(obj string, err error) error {
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EOPNOTSUPP) {
		return withCode(exitUnsupported, fmt.Errorf("res %s -r: %w: no raw dump of %s objects here: the device's driver has none (mlx5 has them, rxe and siw do not), or the kernel lacks the command (QP, CQ, MR since Linux 5.9; SRQ after 6.1); rdma -r is refused the same way", obj, err, obj))
	}
	return err
}
