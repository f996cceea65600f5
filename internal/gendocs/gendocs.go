// Package gendocs turns a cobra command tree into the files shipped beside
// the binary: shell completion scripts (completions/) and one man page per
// command (man/). The output depends only on the command tree: no dates,
// no paths, no map order, so that a test can tell whether the committed
// files are stale (cmd/rdmactl/docs_test.go; `make docs` rewrites them).
//
// The man pages are written here, in plain roff (man(7) macros), rather
// than with cobra/doc, which would pull go-md2man and blackfriday into
// go.sum for what is a few dozen lines.
package gendocs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Section is an extra man page section, e.g. EXIT STATUS.
type Section struct {
	Title string
	// Rows are shown as a tagged list (.TP): tag, then text. Text alone
	// (empty Tag) is a paragraph.
	Rows []Row
}

// Row is one entry of a Section.
type Row struct{ Tag, Text string }

// Options tunes the output.
type Options struct {
	// Manual is the centre header of every page ("rdmactl Manual").
	Manual string
	// Source is the left footer ("rdmactl").
	Source string
	// RootSections are appended to the root command's page only;
	// AllSections to every page.
	RootSections, AllSections []Section
}

// Generate returns the files for root's tree: slash-separated paths
// relative to the repository root ("man/rdmactl-link-show.1") mapped to
// their content.
func Generate(root *cobra.Command, o Options) (map[string][]byte, error) {
	files := map[string][]byte{}
	name := root.Name()
	gens := []struct {
		file string
		gen  func(*bytes.Buffer) error
	}{
		{"completions/" + name + ".bash", func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) }},
		{"completions/" + name + ".zsh", func(b *bytes.Buffer) error { return root.GenZshCompletion(b) }},
		{"completions/" + name + ".fish", func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) }},
		{"completions/" + name + ".ps1", func(b *bytes.Buffer) error { return root.GenPowerShellCompletionWithDesc(b) }},
	}
	for _, g := range gens {
		var b bytes.Buffer
		if err := g.gen(&b); err != nil {
			return nil, fmt.Errorf("%s: %w", g.file, err)
		}
		files[g.file] = b.Bytes()
	}
	var err error
	walk(root, func(c *cobra.Command) {
		if err != nil {
			return
		}
		var b bytes.Buffer
		writeMan(&b, c, o)
		files["man/"+pageName(c)+".1"] = b.Bytes()
	})
	return files, err
}

// Documented reports whether c gets a man page: runnable or with
// subcommands, not hidden, not deprecated, not cobra's help command.
func Documented(c *cobra.Command) bool {
	return c.IsAvailableCommand() && c.Name() != "help"
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	if !Documented(c) && c.HasParent() {
		return
	}
	f(c)
	for _, sub := range c.Commands() { // sorted by name
		walk(sub, f)
	}
}

// pageName is the command path with dashes: "rdmactl-link-show".
func pageName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// Write writes files under dir and removes files in the generated
// directories that the tree no longer produces (a removed command's page).
func Write(dir string, files map[string][]byte) error {
	for _, stale := range Stale(dir, files) {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(stale))); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(files) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Check compares files with what is under dir and describes each
// difference in one line ("man/rdmactl-x.1: missing"); nil when up to date.
func Check(dir string, files map[string][]byte) []string {
	var diffs []string
	for _, p := range sortedKeys(files) {
		have, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		switch {
		case err != nil:
			diffs = append(diffs, p+": missing")
		case !bytes.Equal(have, files[p]):
			diffs = append(diffs, p+": differs"+firstDiff(have, files[p]))
		}
	}
	for _, s := range Stale(dir, files) {
		diffs = append(diffs, s+": no longer generated")
	}
	return diffs
}

// Stale lists files in the directories files writes to that files does not
// contain.
func Stale(dir string, files map[string][]byte) []string {
	dirs := map[string]bool{}
	for p := range files {
		dirs[filepath.ToSlash(filepath.Dir(filepath.FromSlash(p)))] = true
	}
	var stale []string
	for _, d := range sortedKeys(dirs) {
		ents, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d)))
		for _, e := range ents {
			p := d + "/" + e.Name()
			if _, ok := files[p]; !ok && !e.IsDir() {
				stale = append(stale, p)
			}
		}
	}
	return stale
}

// firstDiff shows the first differing line, to make a stale file obvious.
func firstDiff(have, want []byte) string {
	h := strings.Split(string(have), "\n")
	w := strings.Split(string(want), "\n")
	for i := 0; i < len(h) || i < len(w); i++ {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			return fmt.Sprintf(" (line %d: have %q, want %q)", i+1, hl, wl)
		}
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ---- roff ---------------------------------------------------------------------

// esc makes text safe for roff: backslashes escaped, '-' as a real minus
// (so options can be copied and searched), and a leading '.' or '\” made
// literal so that it is not taken for a request.
func esc(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// paragraphs writes text with blank lines as paragraph breaks; lines that
// are indented (examples, lists inside Long) are kept as they are.
func paragraphs(b *bytes.Buffer, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	for _, para := range strings.Split(text, "\n\n") {
		lines := strings.Split(strings.Trim(para, "\n"), "\n")
		pre := false
		for _, l := range lines {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				pre = true
			}
		}
		b.WriteString(".PP\n")
		if pre {
			b.WriteString(".nf\n")
		}
		for _, l := range lines {
			b.WriteString(esc(l) + "\n")
		}
		if pre {
			b.WriteString(".fi\n")
		}
	}
}

func writeMan(b *bytes.Buffer, c *cobra.Command, o Options) {
	page := pageName(c)
	fmt.Fprintf(b, ".\\\" Generated from the command tree by internal/gendocs (make docs). Do not edit.\n")
	// No date: the page must not change when nothing but the clock did.
	fmt.Fprintf(b, ".TH \"%s\" 1 \"\" \"%s\" \"%s\"\n", esc(strings.ToUpper(page)), esc(o.Source), esc(o.Manual))

	b.WriteString(".SH NAME\n")
	fmt.Fprintf(b, "%s \\- %s\n", esc(page), esc(c.Short))

	b.WriteString(".SH SYNOPSIS\n.nf\n")
	// UseLine's "[flags]" counts the parents' persistent flags only once
	// they are merged into c, which cobra does before it runs or helps a
	// command, and InheritedFlags does here.
	c.InheritedFlags()
	if c.Runnable() {
		fmt.Fprintf(b, "\\fB%s\\fP%s\n", esc(c.CommandPath()), esc(strings.TrimPrefix(c.UseLine(), c.CommandPath())))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(b, "\\fB%s\\fP \\fICOMMAND\\fP [flags]\n", esc(c.CommandPath()))
	}
	b.WriteString(".fi\n")

	b.WriteString(".SH DESCRIPTION\n")
	if c.Long != "" {
		paragraphs(b, c.Long)
	} else {
		paragraphs(b, c.Short)
	}

	if subs := documentedSubs(c); len(subs) > 0 {
		b.WriteString(".SH COMMANDS\n")
		for _, s := range subs {
			fmt.Fprintf(b, ".TP\n\\fB%s\\fP(1)\n%s\n", esc(pageName(s)), esc(s.Short))
		}
	}

	writeFlags(b, "OPTIONS", c.NonInheritedFlags())
	writeFlags(b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())

	if ex := strings.Trim(c.Example, "\n"); ex != "" {
		b.WriteString(".SH EXAMPLES\n.PP\n.nf\n.RS 4\n")
		for _, l := range strings.Split(ex, "\n") {
			fmt.Fprintf(b, "%s\n", esc(strings.TrimPrefix(l, "  ")))
		}
		b.WriteString(".RE\n.fi\n")
	}

	var sections []Section
	if !c.HasParent() {
		sections = append(sections, o.RootSections...)
	}
	sections = append(sections, o.AllSections...)
	for _, s := range sections {
		fmt.Fprintf(b, ".SH %s\n", esc(strings.ToUpper(s.Title)))
		for _, r := range s.Rows {
			if r.Tag == "" {
				paragraphs(b, r.Text)
				continue
			}
			fmt.Fprintf(b, ".TP\n.B %s\n%s\n", esc(r.Tag), esc(r.Text))
		}
	}

	var see []string
	if c.HasParent() {
		see = append(see, pageName(c.Parent()))
	}
	for _, s := range documentedSubs(c) {
		see = append(see, pageName(s))
	}
	if len(see) > 0 {
		b.WriteString(".SH SEE ALSO\n")
		for i, s := range see {
			sep := ","
			if i == len(see)-1 {
				sep = ""
			}
			fmt.Fprintf(b, ".BR %s (1)%s\n", esc(s), sep)
		}
	}
}

func documentedSubs(c *cobra.Command) []*cobra.Command {
	var subs []*cobra.Command
	for _, s := range c.Commands() {
		if Documented(s) {
			subs = append(subs, s)
		}
	}
	return subs
}

// writeFlags lists flags as "-j, --json" with the value name pflag takes
// from the usage's `BACKQUOTED` word and the default when it says anything.
func writeFlags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Deprecated != "" {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		tag := ""
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			tag = fmt.Sprintf("\\fB\\-%s\\fP, ", esc(f.Shorthand))
		}
		tag += fmt.Sprintf("\\fB\\-\\-%s\\fP", esc(f.Name))
		if varname != "" && f.Value.Type() != "bool" {
			tag += fmt.Sprintf(" \\fI%s\\fP", esc(varname))
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" && f.Name != "help" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		rows = append(rows, fmt.Sprintf(".TP\n%s\n%s\n", tag, esc(usage)))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", title)
	for _, r := range rows {
		b.WriteString(r)
	}
}
