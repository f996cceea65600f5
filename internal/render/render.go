// Package render writes what rdmactl's commands print: borderless tables,
// JSON, and the layout of ibv_devinfo -v. It formats models it is given
// and reads nothing from the system.
package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// JSON writes v as one JSON document: compact, or indented by two spaces
// when pretty; no HTML escaping ("<", ">", "&" stay as they are, as jq
// users expect). Every command's JSON goes through here so that all
// commands format alike.
func JSON(w io.Writer, v any, pretty bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// Table is a plain, borderless, left-aligned table in the style of
// kubectl and ip: easy to read and easy to grep. Cells are separated by two
// spaces; an empty cell prints as "-".
//
// It is text/tabwriter rather than olekukonko/tablewriter, which the
// project first chose: every rdmactl run pays for the package init of
// tablewriter's dependency tree (runewidth tables, twwidth's 650 KB cache,
// database/sql, log/slog, regexp), measured with GODEBUG=inittrace=1 at
// 60-80 ms per invocation in the TCG VM, which alone made 'rdmactl link show'
// slower than 'rdma link show'. Borderless left-aligned columns are all we
// render, and tabwriter does exactly that.
//
// tabwriter writes every cell with its own Write; on an *os.File that is a
// syscall per cell (48,658 writes for 'counters' at 128 devices), so the
// table goes through a buffer flushed by Flush.
type Table struct {
	w   *tabwriter.Writer
	buf *bufio.Writer
	row []byte // the row being formatted, reused (counters: 4,000 rows)
	esc []byte // a cell being escaped (escapeCell), reused
}

// NewTable starts a table on w with a header row.
func NewTable(w io.Writer, header ...string) *Table {
	buf := bufio.NewWriterSize(w, 32<<10)
	t := &Table{w: tabwriter.NewWriter(buf, 0, 0, 2, ' ', 0), buf: buf}
	cells := make([]any, len(header))
	for i, h := range header {
		cells[i] = h
	}
	t.Row(cells...)
	return t
}

// Row appends one row; values are formatted with %v, nil and "" as "-".
// Tabs and newlines inside a value would break the columns, so they become
// spaces.
func (t *Table) Row(cells ...any) {
	b := t.row[:0]
	for i, c := range cells {
		if i > 0 {
			b = append(b, '\t')
		}
		n := len(b)
		switch v := c.(type) {
		case nil:
		case string:
			b = append(b, v...)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case uint32:
			b = strconv.AppendUint(b, uint64(v), 10)
		case uint64:
			b = strconv.AppendUint(b, v, 10)
		default:
			b = fmt.Append(b, v)
		}
		if len(b) == n {
			b = append(b, '-')
		}
		if esc, ok := escapeCell(b[n:], t.esc[:0]); ok {
			t.esc = esc
			b = append(b[:n], esc...)
		}
	}
	b = append(b, '\n')
	t.w.Write(b) // into the buffer; its errors come back from Flush
	t.row = b
}

// Flush aligns the rows and writes them out.
func (t *Table) Flush() error {
	if err := t.w.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
}

// escapeCell makes a cell's bytes safe for a terminal and for the column
// layout: tabs and line ends become spaces, and every other control
// character (C0, DEL, and C1 as UTF-8: U+0080-U+009F, which some
// terminals obey as escape sequences) is written as \xNN or \uNNNN, as Go's
// %q does. A device name, firmware version or counter name from a captured
// tree is then printed, never obeyed: it cannot clear the screen or draw a
// forged line. ok is false, and nothing is copied, for a clean cell; the
// escaped cell is built in scratch.
func escapeCell(c, scratch []byte) (esc []byte, ok bool) {
	i := 0
	for ; i < len(c); i++ {
		if needsEscape(c, i) {
			break
		}
	}
	if i == len(c) {
		return nil, false
	}
	out := append(scratch, c[:i]...)
	for ; i < len(c); i++ {
		x := c[i]
		switch {
		case x == '\t' || x == '\n' || x == '\r':
			out = append(out, ' ')
		case x < 0x20 || x == 0x7f:
			out = fmt.Appendf(out, "\\x%02x", x)
		case needsEscape(c, i): // C1: 0xc2 then 0x80-0x9f
			i++
			out = fmt.Appendf(out, "\\u%04x", c[i])
		default:
			out = append(out, x)
		}
	}
	return out, true
}

// Escape is s as a table cell prints it (escapeCell), for text drawn
// outside a Table (top's screen).
func Escape(s string) string {
	for i := 0; i < len(s); i++ {
		if needsEscape([]byte(s[i:min(i+2, len(s))]), 0) {
			esc, _ := escapeCell([]byte(s), nil)
			return string(esc)
		}
	}
	return s
}

// needsEscape: c[i] starts a byte sequence escapeCell rewrites.
func needsEscape(c []byte, i int) bool {
	x := c[i]
	return x < 0x20 || x == 0x7f || x == 0xc2 && i+1 < len(c) && c[i+1] >= 0x80 && c[i+1] <= 0x9f
}

// OnOff is rdma's on|off for a setting, "" when it is unknown (nil).
func OnOff(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "on"
	}
	return "off"
}

// Opt is *p as a table cell: nil, which prints as the table's empty mark,
// when p is nil (a field the kernel did not report).
func Opt[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
