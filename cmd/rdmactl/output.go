package main

import (
	"io"

	"github.com/rdmactl/rdmactl/internal/render"
)

// printJSON writes v as JSON: compact by default, indented with -p
// (render.JSON).
func (a *app) printJSON(v any) error { return render.JSON(a.stdout, v, a.opts.pretty) }

// table is render.Table under the names the commands use.
type table struct{ t *render.Table }

func newTable(w io.Writer, header ...string) *table {
	return &table{render.NewTable(w, header...)}
}

func (t *table) row(cells ...any) { t.t.Row(cells...) }
func (t *table) render() error    { return t.t.Flush() }
