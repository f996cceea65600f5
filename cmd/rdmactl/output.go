package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// printJSON writes v as JSON: compact by default, indented with -p.
// Every command's JSON goes through here so that all commands format alike.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	if a.opts.pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// table is a plain, borderless, left-aligned table in the style of
// kubectl and ip: easy to read and easy to grep.
type table struct {
	t *tablewriter.Table
}

func newTable(w io.Writer, header ...string) *table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenRows: tw.Off, BetweenColumns: tw.Off, ShowHeader: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	hdr := make([]any, len(header))
	for i, h := range header {
		hdr[i] = h
	}
	t.Header(hdr...)
	return &table{t: t}
}

// row appends one row; values are formatted with %v, nil as "-".
func (t *table) row(cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case nil:
			s[i] = "-"
		case string:
			if v == "" {
				v = "-"
			}
			s[i] = v
		default:
			s[i] = fmt.Sprint(v)
		}
	}
	_ = t.t.Append(s)
}

func (t *table) render() error { return t.t.Render() }
