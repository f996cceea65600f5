package main

import "github.com/rdmactl/rdmactl/internal/render"

// printJSON writes v as JSON: compact by default, indented with -p
// (render.JSON).
func (a *app) printJSON(v any) error { return render.JSON(a.stdout, v, a.opts.pretty) }
