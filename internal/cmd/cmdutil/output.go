package cmdutil

import "github.com/rdmactl/rdmactl/internal/render"

// PrintJSON writes v as JSON: compact by default, indented with -p
// (render.JSON).
func (a *App) PrintJSON(v any) error { return render.JSON(a.Stdout, v, a.Opts.Pretty) }
