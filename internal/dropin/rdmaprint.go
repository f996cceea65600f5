package dropin

import (
	"fmt"
	"io"
)

// rdma prints through iproute2's json_print layer (lib/json_print.c over
// lib/json_writer.c): every print_* call names a JSON key and a printf
// format, and prints one or the other depending on whether a JSON writer
// exists. The writer exists only between new_json_obj and
// delete_json_obj, which the commands that list things call (an array
// of objects, one per line of text): a command that never calls them
// ("rdma -j system show") prints its text even under -j. The layout of
// the JSON (spaces, newlines, four-space indentation under -p) is the
// writer's, reproduced here call for call.

// jsonWriter is json_writer.c's streaming writer: sep is the character
// owed before the next element (0 or ',').
type jsonWriter struct {
	w      io.Writer
	depth  int
	pretty bool
	sep    byte
}

func (j *jsonWriter) put(s string) { io.WriteString(j.w, s) }

// eol ends the line and indents, under pretty only (jsonw_eol).
func (j *jsonWriter) eol() {
	if !j.pretty {
		return
	}
	j.put("\n")
	for i := 0; i < j.depth; i++ {
		j.put("    ")
	}
}

// eor writes the separator owed (jsonw_eor).
func (j *jsonWriter) eor() {
	if j.sep != 0 {
		j.put(string(j.sep))
	}
	j.sep = ','
}

// quote is jsonw_puts: C escapes only, other bytes as they are.
func (j *jsonWriter) quote(s string) {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\f':
			b = append(b, '\\', 'f')
		case '\b':
			b = append(b, '\\', 'b')
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		default:
			b = append(b, c)
		}
	}
	j.w.Write(append(b, '"'))
}

func (j *jsonWriter) begin(c string) {
	j.eor()
	j.put(c)
	j.depth++
	j.sep = 0
}

func (j *jsonWriter) end(c string) {
	j.depth--
	if j.sep != 0 {
		j.eol()
	}
	j.put(c)
	j.sep = ','
}

func (j *jsonWriter) name(n string) {
	j.eor()
	j.eol()
	j.sep = 0
	j.quote(n)
	j.put(":")
	if j.pretty {
		j.put(" ")
	}
}

func (j *jsonWriter) startObject() { j.begin("{") }
func (j *jsonWriter) endObject()   { j.end("}") }

func (j *jsonWriter) startArray() {
	j.begin("[")
	if j.pretty {
		j.put(" ")
	}
}

func (j *jsonWriter) endArray() {
	if j.pretty && j.sep != 0 {
		j.put(" ")
	}
	j.sep = 0
	j.end("]")
}

// value writes a value already formatted (jsonw_printf).
func (j *jsonWriter) value(s string) {
	j.eor()
	j.put(s)
}

func (j *jsonWriter) str(s string) {
	j.eor()
	j.quote(s)
}

// printKind is json_print.h's enum output_type.
type printKind int

const (
	printFP   printKind = 1 // text only
	printJSON printKind = 2 // JSON only
	printAny  printKind = 4 // whichever is in effect
)

// rdPrinter is json_print.c's state: the writer while a JSON object is
// open (nil otherwise: text).
type rdPrinter struct {
	out    io.Writer
	jw     *jsonWriter
	pretty bool
}

func (p *rdPrinter) jsonCtx(t printKind) bool { return p.jw != nil && t != printFP }
func (p *rdPrinter) fpCtx(t printKind) bool   { return p.jw == nil && t != printJSON }

// newJSONObj is new_json_obj: under -j, a writer and its outer array.
func (p *rdPrinter) newJSONObj(json bool) {
	if !json {
		return
	}
	p.jw = &jsonWriter{w: p.out, pretty: p.pretty}
	p.jw.startArray()
}

// deleteJSONObj is delete_json_obj: the array closed, then a newline.
func (p *rdPrinter) deleteJSONObj() {
	if p.jw == nil {
		return
	}
	p.jw.endArray()
	p.jw.put("\n")
	p.jw = nil
}

func (p *rdPrinter) openObject() {
	if p.jw != nil {
		p.jw.startObject()
	}
}

func (p *rdPrinter) closeObject() {
	if p.jw != nil {
		p.jw.endObject()
	}
}

// openArray: a keyed array in JSON, str as text in FP.
func (p *rdPrinter) openArray(t printKind, str string) {
	if p.jsonCtx(t) {
		if str != "" {
			p.jw.name(str)
		}
		p.jw.startArray()
	} else if p.fpCtx(t) {
		io.WriteString(p.out, str)
	}
}

func (p *rdPrinter) closeArray(t printKind, str string) {
	if p.jsonCtx(t) {
		p.jw.endArray()
	} else if p.fpCtx(t) {
		io.WriteString(p.out, str)
	}
}

// fp prints format as text: a "" format is C's NULL one, which glibc's
// printf refuses, printing nothing.
func (p *rdPrinter) fp(format string, v any) {
	if format == "" {
		return
	}
	fmt.Fprintf(p.out, format, v)
}

// field writes key (or nothing: an array element) and a formatted value.
func (p *rdPrinter) field(key, v string) {
	if key != "" {
		p.jw.name(key)
	}
	p.jw.value(v)
}

// str is print_color_string with a value (Go formats: %s).
func (p *rdPrinter) str(t printKind, key, format, v string) {
	if p.jsonCtx(t) {
		if key != "" {
			p.jw.name(key)
		}
		p.jw.str(v)
	} else if p.fpCtx(t) {
		p.fp(format, v)
	}
}

// text prints s as text only (print_color_string(PRINT_FP, NULL, s, NULL)).
func (p *rdPrinter) text(s string) {
	if p.jw == nil {
		io.WriteString(p.out, s)
	}
}

// uint is print_color_uint (and _u64, _int: the same digits for the
// values rdma passes); format is Go's, with %d.
func (p *rdPrinter) uint(t printKind, key, format string, v uint64) {
	if p.jsonCtx(t) {
		p.field(key, fmt.Sprint(v))
	} else if p.fpCtx(t) {
		p.fp(format, v)
	}
}

// onOff is print_color_on_off: a JSON bool, "on" or "off" as text.
func (p *rdPrinter) onOff(t printKind, key, format string, v bool) {
	if p.jsonCtx(t) {
		p.field(key, fmt.Sprint(v))
	} else if p.fpCtx(t) {
		s := "off"
		if v {
			s = "on"
		}
		p.fp(format, s)
	}
}

// hex is print_color_hex: an unsigned int, a JSON string of %x.
func (p *rdPrinter) hex(t printKind, key, format string, v uint32) {
	if p.jsonCtx(t) {
		if key != "" {
			p.jw.name(key)
		}
		p.jw.str(fmt.Sprintf("%x", v))
	} else if p.fpCtx(t) {
		p.fp(format, v)
	}
}
