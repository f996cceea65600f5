// Package resobj describes each object of `rdmactl res` once, as
// iproute2's rdma/res-*.c files do: rdma's filters for it with the field
// each reads, its table's columns, and how each object the inventory
// lists becomes a table row and a JSON object. cmd/rdmactl's res command
// is one loop over these.
//
// JSON keys are rdma -j resource show's, hyphens turned into underscores
// (sq-psn -> sq_psn, path-mig-state -> path_mig_state, poll-ctx ->
// poll_ctx, cm-idn -> cm_idn, qp-type -> qp_type, src-addr -> src_addr,
// adaptive-moderation -> adaptive_moderation). As in rdma, a key is absent
// when the kernel did not report the field (rqpn of an unconnected QP, pid
// of a kernel-owned object...). Differences from rdma -j, on purpose:
// rkey, lkey, iova, local_dma_lkey and unsafe_global_rkey are numbers
// (rdma prints bare hex strings, and truncates iova to 32 bits); comm of a
// kernel-owned object is the module name without brackets (as rdma -j;
// its text output adds []), of a user object /proc/PID/comm ("" if the
// process is gone).
package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Source lists the objects (inventory.Source).
type Source interface {
	ResSummaries(dev string) ([]nldev.Summary, error)
	QPs(inventory.ResFilter) ([]inventory.QP, error)
	CQs(inventory.ResFilter) ([]inventory.CQ, error)
	MRs(inventory.ResFilter) ([]inventory.MR, error)
	PDs(inventory.ResFilter) ([]inventory.PD, error)
	CMIDs(inventory.ResFilter) ([]inventory.CMID, error)
	Contexts(inventory.ResFilter) ([]inventory.Ctx, error)
	SRQs(inventory.ResFilter) ([]inventory.SRQ, error)
}

// Object is one resource object of res.
type Object struct {
	// Name is the object's word: qp, cq, mr, pd, cm_id, ctx, srq; "" for
	// the per-device counts (Summary).
	Name string
	// Filters are rdma's filters for the object (res.h's valid filters),
	// in rdma's order: names and kinds (the values are a zero object's).
	Filters []Filter
	// Columns is the table's header (a DRIVER column follows under -dd).
	Columns []string
	// Raw: the kernel dumps the object's driver image (rdma -r; the
	// RES_*_GET_RAW commands: qp, cq, mr, srq).
	Raw  bool
	rows func(src Source, f inventory.ResFilter, m Match) ([]Row, error)
}

// Row is one object: its table cells (Columns' order; nil prints as the
// table's empty mark), its JSON object, and the driver's own attributes
// (-dd).
type Row struct {
	Cells  []any
	JSON   any
	Driver []nldev.DriverAttr

	counts bool // a row of Summary: no driver column
}

// Rows lists the objects f selects and m matches, as rows.
func (o *Object) Rows(src Source, f inventory.ResFilter, m Match) ([]Row, error) {
	return o.rows(src, f, m)
}

// HasFilter reports whether key is one of rdma's filters for o.
func (o *Object) HasFilter(key string) bool {
	for _, f := range o.Filters {
		if f.Name == key {
			return true
		}
	}
	return false
}

// FilterNames are the names of o's filters, in rdma's order.
func (o *Object) FilterNames() []string {
	n := make([]string, len(o.Filters))
	for i, f := range o.Filters {
		n[i] = f.Name
	}
	return n
}

// Objects are res's objects, in the order rdmactl names them.
var Objects = []*Object{qpObject, cqObject, mrObject, pdObject, cmIDObject, ctxObject, srqObject}

// Lookup is the object named name, or nil.
func Lookup(name string) *Object {
	for _, o := range Objects {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// Names are the objects' names, in Objects' order.
func Names() []string {
	n := make([]string, len(Objects))
	for i, o := range Objects {
		n[i] = o.Name
	}
	return n
}

// desc is the descriptor of one object whose type in the inventory is T:
// an object file's one declaration, which object makes into an Object.
type desc[T any] struct {
	Name    string
	Columns []string
	Raw     bool
	// List lists the objects (a Source method, such as Source.QPs).
	List func(Source, inventory.ResFilter) ([]T, error)
	// Filters is rdma's filter table for the object, in rdma's order,
	// with x's value of the field each filter reads.
	Filters func(x T) []Filter
	Row     func(T) Row
}

// object is d as an Object: its filter table's names and kinds are
// those of a zero T, and the objects m does not keep are not rows.
func (d desc[T]) object() *Object {
	var zero T
	return &Object{Name: d.Name, Filters: d.Filters(zero), Columns: d.Columns, Raw: d.Raw,
		rows: func(src Source, f inventory.ResFilter, m Match) ([]Row, error) {
			xs, err := d.List(src, f)
			if err != nil {
				return nil, err
			}
			var rows []Row
			for _, x := range xs {
				if m.empty() || m.keeps(d.Filters(x)) {
					rows = append(rows, d.Row(x))
				}
			}
			return rows, nil
		}}
}
