package web

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The web config file is YAML. Linking a YAML library would cost every
// rdmactl command its init at start-up (docs/exporter.md measures it), so
// this reads the part of YAML that such files are written in, by hand or
// by configuration management: block mappings and sequences, plain and
// quoted scalars, single-line flow sequences and mappings, literal and
// folded block scalars (an inline PEM certificate), comments, a leading
// "---". Anything else (anchors, aliases, tags, multi-line flow or
// quoted scalars, several documents) is refused with its line number,
// never read another way.

// yamlKind is what a node holds.
type yamlKind uint8

const (
	yamlNull yamlKind = iota
	yamlScalar
	yamlMap
	yamlSeq
)

// yamlNode is one value: a scalar's text (quoted: it was in quotes, so it
// is a string whatever it looks like), a mapping's keys and values in
// order, or a sequence's items.
type yamlNode struct {
	kind   yamlKind
	line   int
	text   string
	quoted bool
	keys   []string
	vals   []*yamlNode
}

// yamlError is a place in the file and what is wrong there.
type yamlError struct {
	line int
	msg  string
}

func (e *yamlError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func yamlErrorf(line int, format string, a ...any) error {
	return &yamlError{line: line, msg: fmt.Sprintf(format, a...)}
}

// yamlLine is one line of the file: its number, the columns of
// indentation and the rest, raw (block scalars keep their '#').
type yamlLine struct {
	num    int
	indent int
	raw    string
}

type yamlParser struct {
	lines []yamlLine
	pos   int
}

// maxYAMLDepth bounds nesting: a web config is three levels deep.
const maxYAMLDepth = 32

// parseYAML parses one YAML document of the subset.
func parseYAML(src []byte) (*yamlNode, error) {
	if !utf8.Valid(src) {
		return nil, yamlErrorf(1, "not UTF-8 text")
	}
	text := strings.TrimPrefix(string(src), "\ufeff")
	p := &yamlParser{}
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		l = strings.TrimSuffix(l, "\r")
		n := len(l) - len(strings.TrimLeft(l, " "))
		if n < len(l) && l[n] == '\t' && strings.TrimSpace(l) != "" {
			return nil, yamlErrorf(i+1, "a tab in the indentation: YAML indents with spaces")
		}
		p.lines = append(p.lines, yamlLine{num: i + 1, indent: n, raw: l[n:]})
	}
	p.skipBlank()
	if p.pos < len(p.lines) && p.lines[p.pos].indent == 0 && isDocMarker(p.lines[p.pos].raw, "---") {
		if rest := strings.TrimSpace(p.lines[p.pos].raw[3:]); rest != "" && rest[0] != '#' {
			return nil, yamlErrorf(p.lines[p.pos].num, "content after '---': put it on the next line")
		}
		p.pos++
		p.skipBlank()
	}
	if p.pos >= len(p.lines) {
		return &yamlNode{kind: yamlNull, line: 1}, nil
	}
	first := p.lines[p.pos]
	n, err := p.block(first.indent, 0)
	if err != nil {
		return nil, err
	}
	p.skipBlank()
	if p.pos < len(p.lines) {
		l := p.lines[p.pos]
		if l.indent == 0 && isDocMarker(l.raw, "...") {
			p.pos++
			p.skipBlank()
			if p.pos == len(p.lines) {
				return n, nil
			}
			l = p.lines[p.pos]
		}
		if l.indent == 0 && isDocMarker(l.raw, "---") {
			return nil, yamlErrorf(l.num, "a second YAML document: the file holds one")
		}
		return nil, yamlErrorf(l.num, "unexpected indentation")
	}
	return n, nil
}

func isDocMarker(s, m string) bool {
	return strings.HasPrefix(s, m) && (len(s) == 3 || s[3] == ' ' || s[3] == '\t')
}

// content is a line without its comment and trailing blanks.
func content(l yamlLine) string {
	s := l.raw
	inS, inD := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inD && c == '\\':
			i++
		case c == '"' && !inS && (inD || opensQuote(s, i)):
			inD = !inD
		case c == '\'' && !inD && (inS || opensQuote(s, i)):
			inS = !inS
		case c == '#' && !inS && !inD && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			s = s[:i]
		}
	}
	return strings.TrimRight(s, " \t")
}

// opensQuote: a quote at s[i] starts a quoted scalar (an apostrophe
// inside a plain one, as in "don't", does not).
func opensQuote(s string, i int) bool {
	return i == 0 || strings.IndexByte(" \t[{,:", s[i-1]) >= 0
}

// endOfBlock: no more lines at column ind (or a document marker).
func (p *yamlParser) endOfBlock(ind int) bool {
	p.skipBlank()
	if p.pos >= len(p.lines) || p.lines[p.pos].indent != ind {
		return true
	}
	l := p.lines[p.pos]
	return l.indent == 0 && (isDocMarker(l.raw, "---") || isDocMarker(l.raw, "..."))
}

func (p *yamlParser) skipBlank() {
	for p.pos < len(p.lines) && content(p.lines[p.pos]) == "" {
		p.pos++
	}
}

// block parses the mapping or sequence whose lines start at column ind.
func (p *yamlParser) block(ind, depth int) (*yamlNode, error) {
	if depth > maxYAMLDepth {
		return nil, yamlErrorf(p.lines[p.pos].num, "nested more than %d levels", maxYAMLDepth)
	}
	l := p.lines[p.pos]
	c := content(l)
	if c == "-" || strings.HasPrefix(c, "- ") {
		return p.sequence(ind, depth)
	}
	if _, _, ok, err := splitKey(c, l.num); err != nil || ok {
		if err != nil {
			return nil, err
		}
		return p.mapping(ind, depth)
	}
	// A lone scalar or flow collection.
	p.pos++
	return scalarOrFlow(c, l.num, depth)
}

// sequence parses "- item" lines at column ind.
func (p *yamlParser) sequence(ind, depth int) (*yamlNode, error) {
	seq := &yamlNode{kind: yamlSeq, line: p.lines[p.pos].num}
	for !p.endOfBlock(ind) {
		l := p.lines[p.pos]
		c := content(l)
		if c != "-" && !strings.HasPrefix(c, "- ") {
			break
		}
		rest := strings.TrimLeft(c[1:], " ")
		if rest == "" {
			p.pos++
			item, err := p.child(ind, depth, true)
			if err != nil {
				return nil, err
			}
			seq.vals = append(seq.vals, item)
			continue
		}
		// "- key: value" or "- - x": the rest is a block at its own column.
		col := ind + (len(c) - len(rest))
		p.lines[p.pos] = yamlLine{num: l.num, indent: col, raw: l.raw[len(c)-len(rest):]}
		item, err := p.block(col, depth+1)
		if err != nil {
			return nil, err
		}
		seq.vals = append(seq.vals, item)
	}
	return seq, nil
}

// mapping parses "key: value" lines at column ind.
func (p *yamlParser) mapping(ind, depth int) (*yamlNode, error) {
	m := &yamlNode{kind: yamlMap, line: p.lines[p.pos].num}
	seen := map[string]bool{}
	for !p.endOfBlock(ind) {
		l := p.lines[p.pos]
		c := content(l)
		key, val, ok, err := splitKey(c, l.num)
		if err != nil {
			return nil, err
		}
		if !ok {
			if c == "-" || strings.HasPrefix(c, "- ") {
				return nil, yamlErrorf(l.num, "a sequence item where a key was expected")
			}
			return nil, yamlErrorf(l.num, "want 'key: value'")
		}
		if seen[key] {
			return nil, yamlErrorf(l.num, "key %q given twice", key)
		}
		seen[key] = true
		p.pos++
		var v *yamlNode
		switch {
		case val == "":
			v, err = p.child(ind, depth, false)
			if v != nil && v.kind == yamlNull {
				v.line = l.num
			}
		case val[0] == '|' || val[0] == '>':
			v, err = p.blockScalar(val, ind, l.num)
		default:
			v, err = scalarOrFlow(val, l.num, depth)
		}
		if err != nil {
			return nil, err
		}
		m.keys, m.vals = append(m.keys, key), append(m.vals, v)
	}
	return m, nil
}

// child is the value on the lines after a "key:" or "-" at column ind: a
// block indented further, a sequence at the same column after a key (as
// YAML allows), or null.
func (p *yamlParser) child(ind, depth int, inSeq bool) (*yamlNode, error) {
	p.skipBlank()
	if p.pos >= len(p.lines) {
		return &yamlNode{kind: yamlNull}, nil
	}
	l := p.lines[p.pos]
	if l.indent > ind {
		return p.block(l.indent, depth+1)
	}
	if c := content(l); !inSeq && l.indent == ind && (c == "-" || strings.HasPrefix(c, "- ")) {
		return p.sequence(ind, depth+1)
	}
	return &yamlNode{kind: yamlNull, line: l.num}, nil
}

// blockScalar reads a literal (|) or folded (>) scalar: the lines
// indented further than its key's column ind.
func (p *yamlParser) blockScalar(head string, ind, num int) (*yamlNode, error) {
	style, chomp, explicit := head[0], byte(0), 0
	for _, c := range head[1:] {
		switch {
		case (c == '-' || c == '+') && chomp == 0:
			chomp = byte(c)
		case c >= '1' && c <= '9' && explicit == 0:
			explicit = int(c - '0')
		case c == ' ' || c == '\t':
		default:
			return nil, yamlErrorf(num, "block scalar header %q: want | or > with - or +", head)
		}
	}
	var lines []string
	col := -1
	if explicit > 0 {
		col = ind + explicit
	}
	for p.pos < len(p.lines) {
		l := p.lines[p.pos]
		blank := strings.TrimSpace(l.raw) == ""
		if !blank && l.indent <= ind {
			break
		}
		if col < 0 && !blank {
			col = l.indent
		}
		switch {
		case blank:
			lines = append(lines, "")
		case l.indent < col:
			return nil, yamlErrorf(l.num, "block scalar line indented less than its first line")
		default:
			lines = append(lines, strings.Repeat(" ", l.indent-col)+l.raw)
		}
		p.pos++
	}
	// Trailing blank lines belong to chomping.
	end := len(lines)
	for end > 0 && lines[end-1] == "" {
		end--
	}
	var b strings.Builder
	for i, s := range lines[:end] {
		// Folded (>): a line break between two lines of text is a space,
		// one before empty lines is dropped (each empty line is one), and
		// more-indented lines keep theirs.
		if i > 0 {
			switch prev := lines[i-1]; {
			case style == '|' || s == "":
				b.WriteByte('\n')
			case prev == "":
			case s[0] != ' ' && prev[0] != ' ':
				b.WriteByte(' ')
			default:
				b.WriteByte('\n')
			}
		}
		b.WriteString(s)
	}
	text := b.String()
	switch {
	case end == 0:
	case chomp == '-':
	case chomp == '+':
		text += strings.Repeat("\n", len(lines)-end+1)
	default:
		text += "\n"
	}
	return &yamlNode{kind: yamlScalar, line: num, text: text, quoted: true}, nil
}

// splitKey splits "key: value" (value may be empty); ok is false when
// the line is not a mapping entry.
func splitKey(c string, num int) (key, val string, ok bool, err error) {
	if c == "" {
		return "", "", false, nil
	}
	if c[0] == '"' || c[0] == '\'' {
		s, rest, err := quoted(c, num)
		if err != nil {
			return "", "", false, err
		}
		rest = strings.TrimLeft(rest, " ")
		if rest != ":" && !strings.HasPrefix(rest, ": ") {
			return "", "", false, nil
		}
		return s, strings.TrimSpace(rest[1:]), true, nil
	}
	if c[0] == '[' || c[0] == '{' || c[0] == '-' && (len(c) == 1 || c[1] == ' ') {
		return "", "", false, nil
	}
	i := strings.Index(c, ": ")
	if strings.HasSuffix(c, ":") && (i < 0 || i == len(c)-1) {
		i = len(c) - 1
	}
	if i <= 0 {
		return "", "", false, nil
	}
	key = strings.TrimRight(c[:i], " ")
	if strings.ContainsAny(key[:1], "?&*!|>%@`") {
		return "", "", false, yamlErrorf(num, "key %q: complex keys, anchors, aliases and tags are not supported", key)
	}
	return key, strings.TrimSpace(c[i+1:]), true, nil
}

// scalarOrFlow reads a value written on one line.
func scalarOrFlow(s string, num, depth int) (*yamlNode, error) {
	switch s[0] {
	case '[', '{':
		n, rest, err := flow(s, num, depth)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(rest) != "" {
			return nil, yamlErrorf(num, "unexpected %q after a flow collection", rest)
		}
		return n, nil
	case '"', '\'':
		v, rest, err := quoted(s, num)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(rest) != "" {
			return nil, yamlErrorf(num, "unexpected %q after a quoted string", rest)
		}
		return &yamlNode{kind: yamlScalar, line: num, text: v, quoted: true}, nil
	case '&', '*', '!':
		return nil, yamlErrorf(num, "%q: anchors, aliases and tags are not supported", s)
	case '|', '>':
		return nil, yamlErrorf(num, "a block scalar (%c) goes after a key", s[0])
	case '%', '@', '`':
		return nil, yamlErrorf(num, "%q: a plain value cannot start with %c; quote it", s, s[0])
	}
	return plain(s, num)
}

func plain(s string, num int) (*yamlNode, error) {
	if strings.Contains(s, ": ") || strings.HasSuffix(s, ":") {
		return nil, yamlErrorf(num, "%q: a mapping inside a value; quote the value", s)
	}
	if s == "~" || s == "null" || s == "Null" || s == "NULL" {
		return &yamlNode{kind: yamlNull, line: num}, nil
	}
	return &yamlNode{kind: yamlScalar, line: num, text: s}, nil
}

// quoted reads a single- or double-quoted string at the start of s and
// returns the rest of s after it.
func quoted(s string, num int) (string, string, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		case q == '"' && c == '"':
			return b.String(), s[i+1:], nil
		case q == '"' && c == '\\':
			if i+1 >= len(s) {
				return "", "", yamlErrorf(num, "a double-quoted string must end on its line")
			}
			n, r, err := unescape(s[i+1:], num)
			if err != nil {
				return "", "", err
			}
			b.WriteString(r)
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", "", yamlErrorf(num, "a quoted string must end on its line")
}

// unescape reads one escape of a double-quoted string (s is after the
// backslash) and returns how many bytes it took and what it means.
func unescape(s string, num int) (int, string, error) {
	simple := map[byte]string{'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v",
		'f': "\f", 'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\", 'N': "\u0085",
		'_': "\u00a0", 'L': "\u2028", 'P': "\u2029"}
	if r, ok := simple[s[0]]; ok {
		return 1, r, nil
	}
	width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
	if width == 0 || len(s) < 1+width {
		return 0, "", yamlErrorf(num, "unknown escape \\%c in a double-quoted string", s[0])
	}
	v, err := strconv.ParseUint(s[1:1+width], 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, "", yamlErrorf(num, "bad escape \\%s", s[:1+width])
	}
	return 1 + width, string(rune(v)), nil
}

// flow reads a flow sequence or mapping ([a, b], {k: v}) that ends on
// its line, and returns the rest of s after it.
func flow(s string, num, depth int) (*yamlNode, string, error) {
	if depth > maxYAMLDepth {
		return nil, "", yamlErrorf(num, "nested more than %d levels", maxYAMLDepth)
	}
	open := s[0]
	closer := byte(']')
	n := &yamlNode{kind: yamlSeq, line: num}
	if open == '{' {
		closer, n.kind = '}', yamlMap
	}
	s = strings.TrimLeft(s[1:], " ")
	seen := map[string]bool{}
	for {
		if s == "" {
			return nil, "", yamlErrorf(num, "a flow collection must end on its line (missing %c)", closer)
		}
		if s[0] == closer {
			return n, s[1:], nil
		}
		var key string
		if open == '{' {
			var err error
			key, s, err = flowItem(s, num, true)
			if err != nil {
				return nil, "", err
			}
			if seen[key] {
				return nil, "", yamlErrorf(num, "key %q given twice", key)
			}
			seen[key] = true
			s = strings.TrimLeft(s, " ")
			if !strings.HasPrefix(s, ":") {
				return nil, "", yamlErrorf(num, "want 'key: value' in a flow mapping")
			}
			s = strings.TrimLeft(s[1:], " ")
		}
		var v *yamlNode
		switch {
		case s == "":
			continue
		case s[0] == '[' || s[0] == '{':
			var err error
			if v, s, err = flow(s, num, depth+1); err != nil {
				return nil, "", err
			}
		case open == '{' && (s[0] == ',' || s[0] == '}'):
			v = &yamlNode{kind: yamlNull, line: num}
		default:
			wasQuoted := s[0] == '"' || s[0] == '\''
			text, rest, err := flowItem(s, num, false)
			if err != nil {
				return nil, "", err
			}
			s = rest
			if wasQuoted {
				v = &yamlNode{kind: yamlScalar, line: num, text: text, quoted: true}
			} else if v, err = plain(text, num); err != nil {
				return nil, "", err
			}
		}
		if open == '{' {
			n.keys = append(n.keys, key)
		}
		n.vals = append(n.vals, v)
		s = strings.TrimLeft(s, " ")
		if strings.HasPrefix(s, ",") {
			s = strings.TrimLeft(s[1:], " ")
		} else if s == "" {
			return nil, "", yamlErrorf(num, "a flow collection must end on its line (missing %c)", closer)
		} else if s[0] != closer {
			return nil, "", yamlErrorf(num, "want ',' or '%c' in a flow collection", closer)
		}
	}
}

// flowItem reads a scalar inside a flow collection: quoted, or plain up
// to ',' ']' '}' (and ':' for a key).
func flowItem(s string, num int, isKey bool) (string, string, error) {
	if s[0] == '"' || s[0] == '\'' {
		return quoted(s, num)
	}
	if strings.ContainsAny(s[:1], "&*!|>%@`") {
		return "", "", yamlErrorf(num, "%q: anchors, aliases, tags and block scalars are not supported in a flow collection", s)
	}
	end := strings.IndexAny(s, ",]}")
	if isKey {
		if i := strings.Index(s, ":"); i >= 0 && (end < 0 || i < end) {
			end = i
		}
	}
	if end < 0 {
		end = len(s)
	}
	return strings.TrimRight(s[:end], " "), s[end:], nil
}
