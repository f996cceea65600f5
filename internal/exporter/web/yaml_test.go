package web

import (
	"strconv"
	"strings"
	"testing"
)

// dumpYAML writes a node compactly: {k: v, ...}, [a, ...], "text" for a
// quoted scalar, text for a plain one, ~ for null.
func dumpYAML(n *yamlNode) string {
	switch n.kind {
	case yamlNull:
		return "~"
	case yamlScalar:
		if n.quoted {
			return strconv.Quote(n.text)
		}
		return n.text
	case yamlSeq:
		var s []string
		for _, v := range n.vals {
			s = append(s, dumpYAML(v))
		}
		return "[" + strings.Join(s, ", ") + "]"
	}
	var s []string
	for i, k := range n.keys {
		s = append(s, k+": "+dumpYAML(n.vals[i]))
	}
	return "{" + strings.Join(s, ", ") + "}"
}

// TestParseYAML: the forms web config files are written in, each with
// the value YAML gives it.
func TestParseYAML(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "~"},
		{"# only a comment\n", "~"},
		{"---\na: 1\n", "{a: 1}"},
		{"--- # doc\na: 1\n...\n", "{a: 1}"},
		{"a: 1\nb:  two words  \n", "{a: 1, b: two words}"},
		{"a: x # comment\nb: 'y # not a comment'\nc: \"z#w\"\n", `{a: x, b: "y # not a comment", c: "z#w"}`},
		{"a: don't # comment\n", "{a: don't}"},
		{"a: http://x:9/p#frag\n", "{a: http://x:9/p#frag}"},
		{"tls_server_config:\n  cert_file: s.crt\n  key_file: \"s.key\"\n", `{tls_server_config: {cert_file: s.crt, key_file: "s.key"}}`},
		{"a:\n  b:\n    c: d\n  e: f\ng: h\n", "{a: {b: {c: d}, e: f}, g: h}"},
		{"a:\nb: 1\n", "{a: ~, b: 1}"},
		{"a: ~\nb: null\n", "{a: ~, b: ~}"},
		{"l:\n  - x\n  - 'y'\n  -   z\n", `{l: [x, "y", z]}`},
		{"l:\n- x\n- y\nm: 1\n", "{l: [x, y], m: 1}"},
		{"l: [a, 'b, c', \"d\"]\n", `{l: [a, "b, c", "d"]}`},
		{"l: []\nm: {}\n", "{l: [], m: {}}"},
		{"m: {a: 1, b: [x, y], c: }\n", "{m: {a: 1, b: [x, y], c: ~}}"},
		{"l:\n  - a: 1\n    b: 2\n  - c: 3\n", "{l: [{a: 1, b: 2}, {c: 3}]}"},
		{"l:\n  -\n    - x\n", "{l: [[x]]}"},
		{"'quoted key': 1\n\"k2\": 2\n", "{quoted key: 1, k2: 2}"},
		{"s: 'it''s'\nd: \"a\\tb\\\"c\\u00e9\\x41\"\n", `{s: "it's", d: "a\tb\"céA"}`},
		{"cert: |\n  -----BEGIN-----\n  abc # kept\n\n  def\n  -----END-----\nnext: 1\n",
			`{cert: "-----BEGIN-----\nabc # kept\n\ndef\n-----END-----\n", next: 1}`},
		{"k: |-\n  a\n   b\n\n\n", `{k: "a\n b"}`},
		{"k: |+\n  a\n\n", `{k: "a\n\n"}`},
		{"k: >\n  a\n  b\n\n  c\n", `{k: "a b\nc\n"}`},
		{"k: |\n", `{k: ""}`},
		{"a: 1\r\nb: 2\r\n", "{a: 1, b: 2}"},
		{"\ufeffa: 1\n", "{a: 1}"},
		{"a:\n  # comment between\n  b: 1\n", "{a: {b: 1}}"},
		{"a:\n    b\n", "{a: b}"},
	} {
		n, err := parseYAML([]byte(c.in))
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := dumpYAML(n); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// TestParseYAMLRefuses: what the subset does not read, and what is not
// YAML, is refused with the line it is on, never read another way.
func TestParseYAMLRefuses(t *testing.T) {
	for _, c := range []struct {
		in   string
		line int
		has  string
	}{
		{"a: 1\na: 2\n", 2, "twice"},
		{"a:\n\tb: 1\n", 2, "tab"},
		{"a: &x 1\n", 1, "anchors"},
		{"a: *x\n", 1, "anchors"},
		{"a: !!str 1\n", 1, "tags"},
		{"a: 'open\n", 1, "end on its line"},
		{"a: \"open\n", 1, "end on its line"},
		{"a: [x, y\n", 1, "end on its line"},
		{"a: {x: 1\n", 1, "end on its line"},
		{"a: b: c\n", 1, "quote the value"},
		{"a: 1\n  b: 2\n", 2, "indentation"},
		{"a:\n  b: 1\n c: 2\n", 3, "indentation"},
		{"a: 1\n---\nb: 2\n", 2, "second YAML document"},
		{"a: \"\\q\"\n", 1, "unknown escape"},
		{"a: \"\\u12\"\n", 1, "escape"},
		{"a:\n  - x\n  y: 1\n", 3, "indentation"},
		{"? a\n: b\n", 2, "indentation"},
		{"a: [x] y\n", 1, "after a flow collection"},
		{"a: 'x' y\n", 1, "after a quoted string"},
		{"a: |x\n", 1, "block scalar header"},
		{"a: @x\n", 1, "quote it"},
		{"a: {b: 1, b: 2}\n", 1, "twice"},
		{"a: \xff\n", 1, "UTF-8"},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n", 1, "nested"},
	} {
		_, err := parseYAML([]byte(c.in))
		ye, ok := err.(*yamlError)
		if !ok || ye.line != c.line || !strings.Contains(err.Error(), c.has) {
			t.Errorf("%q: %v, want line %d saying %q", c.in, err, c.line, c.has)
		}
	}
}

// FuzzParseYAML: any input is a node or an error, never a panic, and a
// node dumps (no nil inside).
func FuzzParseYAML(f *testing.F) {
	for _, s := range []string{
		"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n  cipher_suites:\n    - TLS_AES_128_GCM_SHA256\n",
		"basic_auth_users:\n  alice: $2y$10$x\nhttp_server_config:\n  headers: {X-Frame-Options: deny}\n",
		"k: |-\n  a\n   b\n", "l: [a, {b: [c]}, 'd''e']\n", "- - - x\n", "a:\n- b\n-\n  c: \"\\u00e9\"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseYAML(b)
		if err != nil {
			if _, ok := err.(*yamlError); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		_ = dumpYAML(n)
		var walk func(*yamlNode)
		walk = func(n *yamlNode) {
			if n == nil {
				t.Fatal("nil node")
			}
			if n.kind == yamlMap && len(n.keys) != len(n.vals) {
				t.Fatalf("%d keys, %d values", len(n.keys), len(n.vals))
			}
			for _, v := range n.vals {
				walk(v)
			}
		}
		walk(n)
	})
}
