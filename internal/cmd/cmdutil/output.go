package cmdutil

import "github.com/rdmactl/rdmactl/internal/render"

// PrintJSON writes v as JSON: compact by default, indented with -p
// (render.JSON).
func (a *App) PrintJSON(v any) error { return render.JSON(a.Stdout, v, a.Opts.Pretty) }

// PrintList writes a command's list of rows as a JSON array: [] when
// there are none, never null, so that `jq '.[]'` works on every answer.
func PrintList[T any](a *App, rows []T) error {
	if rows == nil {
		rows = []T{}
	}
	return a.PrintJSON(rows)
}
