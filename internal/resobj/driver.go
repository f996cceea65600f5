package resobj

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// rdma's -dd on res: the driver's own attributes of each object.
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

// Header is o's table header, with DRIVER last under -dd (dd), but for
// the per-device counts, which have no driver details.
func (o *Object) Header(dd bool) []string {
	if dd && o != Summary {
		return append(o.Columns[:len(o.Columns):len(o.Columns)], "DRIVER")
	}
	return o.Columns
}

// TableCells are r's cells, with the driver's details last under -dd.
func (r Row) TableCells(dd bool) []any { return driverCells(dd && !r.counts, r.Driver, r.Cells...) }

// JSONObject is r's JSON, with the driver's drv_* keys after its own under
// -dd.
func (r Row) JSONObject(dd bool) any { return withDriver(dd, r.JSON, r.Driver) }

// driverCells is a row's cells, with the driver's details last under -dd.
func driverCells(dd bool, drv []nldev.DriverAttr, cells ...any) []any {
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
