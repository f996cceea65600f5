// Package statobj describes each object that `rdmactl statistic` shows
// once, as iproute2's rdma/stat.c does for "rdma statistic": the keywords
// that select it (rdma's filters for it), its table's columns, and how each
// object the inventory lists becomes a table row and a JSON object. The
// statistic command parses the keywords and prints the rows; a port's own
// counters ("rdma statistic show") are the counters command's.
//
// JSON keys are rdma -j statistic's (qp-type as qp_type). On purpose
// unlike rdma -j: the values of a QP counter or an MR are a list of
// {"name", "value"} objects under "counters", where rdma spreads them as
// keys of their own beside the object's; a port's QP counter mode is also
// given as values (counter_mode, auto, optional_counters) beside rdma's
// "mode" text.
package statobj

import (
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// Source lists what the objects show (inventory.Source).
type Source interface {
	QPCounters(dev string, port uint32, f inventory.QPCounterFilter) ([]inventory.QPCounter, error)
	QPCounterModes(dev string, port uint32) ([]inventory.QPCounterMode, error)
	OptionalCounters(dev string, port uint32) ([]inventory.OptionalCounters, error)
	MRStatistics(dev string) ([]inventory.MRStat, error)
}

// Query is what a command line selects: a device ("" every one) and port
// (0 every one), and the values of the number filters it gave.
type Query struct {
	Dev  string
	Port uint32
	Num  map[string]uint32
}

func (q Query) num(key string) *uint32 {
	n, ok := q.Num[key]
	if !ok {
		return nil
	}
	return &n
}

// Object is one object of statistic.
type Object struct {
	// Name is the object's words after "statistic": "qp show", "qp
	// mode", "mode", "mode supported", "mr".
	Name string
	// DevKey is the keyword naming the device: "link" (DEV or DEV/PORT)
	// or "dev" (DEV).
	DevKey string
	// Filters are the object's number filters after DevKey, in the order
	// its usage names them.
	Filters []string
	// Columns is the table's header.
	Columns []string
	rows    func(Source, Query) ([]Row, error)
}

// Row is one object: its table cells (Columns' order; nil prints as the
// table's empty mark) and its JSON object.
type Row struct {
	Cells []any
	JSON  any
}

// Rows lists the objects q selects, as rows.
func (o *Object) Rows(src Source, q Query) ([]Row, error) { return o.rows(src, q) }

// desc is the descriptor of one object whose type in the inventory is T:
// an object file's one declaration, which object makes into an Object.
type desc[T any] struct {
	Name, DevKey string
	Filters      []string
	Columns      []string
	// List lists the objects q selects.
	List func(Source, Query) ([]T, error)
	// Row is x's row; ok false leaves x out.
	Row func(x T, q Query) (r Row, ok bool)
}

func (d desc[T]) object() *Object {
	return &Object{Name: d.Name, DevKey: d.DevKey, Filters: d.Filters, Columns: d.Columns,
		rows: func(src Source, q Query) ([]Row, error) {
			xs, err := d.List(src, q)
			if err != nil {
				return nil, err
			}
			rows := make([]Row, 0, len(xs))
			for _, x := range xs {
				if r, ok := d.Row(x, q); ok {
					rows = append(rows, r)
				}
			}
			return rows, nil
		}}
}

// valueJSON is one counter of a QP counter or an MR.
type valueJSON struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

func values(vs []inventory.StatValue) []valueJSON {
	out := []valueJSON{}
	for _, v := range vs {
		out = append(out, valueJSON{v.Name, v.Value})
	}
	return out
}

// valuesText is the table's NAME=VALUE list of counters.
func valuesText(vs []inventory.StatValue) string {
	var b []string
	for _, v := range vs {
		b = append(b, fmt.Sprintf("%s=%d", v.Name, v.Value))
	}
	return strings.Join(b, " ")
}

// link is a port's DEV/PORT.
func link(dev string, port uint32) string { return fmt.Sprintf("%s/%d", dev, port) }
