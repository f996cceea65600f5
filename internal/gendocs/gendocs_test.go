package gendocs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	root.PersistentFlags().BoolP("json", "j", false, "print JSON")
	show := &cobra.Command{
		Use:     "show [DEV]",
		Short:   "Show things",
		Long:    "Show things.\n\n.dots and \\backslashes are literal.\n\n  indented stays\n  as is",
		Example: "  tool show -j dev0",
		RunE:    func(*cobra.Command, []string) error { return nil },
	}
	show.Flags().String("sysfs-root", "", "read `DIR`")
	hidden := &cobra.Command{Use: "secret", Hidden: true, RunE: show.RunE}
	root.AddCommand(show, hidden)
	return root
}

func TestGenerate(t *testing.T) {
	files, err := Generate(tree(), Options{Manual: "Tool Manual", Source: "tool",
		AllSections: []Section{{Title: "Exit status", Rows: []Row{{Tag: "0", Text: "ok"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"completions/tool.bash", "completions/tool.zsh", "completions/tool.fish",
		"completions/tool.ps1", "man/tool.1", "man/tool-show.1"} {
		if _, ok := files[want]; !ok {
			t.Errorf("no %s", want)
		}
	}
	if _, ok := files["man/tool-secret.1"]; ok {
		t.Error("hidden command got a page")
	}
	page := string(files["man/tool-show.1"])
	for _, want := range []string{
		`.TH "TOOL\-SHOW" 1 "" "tool" "Tool Manual"`,
		`tool\-show \- Show things`,
		`\fBtool show\fP [DEV] [flags]`,
		`\&.dots and \ebackslashes are literal.`,
		".nf\n  indented stays\n  as is\n.fi",
		`\fB\-\-sysfs\-root\fP \fIDIR\fP`,
		".SH OPTIONS INHERITED FROM PARENT COMMANDS\n.TP\n\\fB\\-j\\fP, \\fB\\-\\-json\\fP",
		"tool show \\-j dev0",
		".SH EXIT STATUS\n.TP\n.B 0\nok",
		".BR tool (1)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("tool-show.1 lacks %q:\n%s", want, page)
		}
	}
}

func TestWriteCheckStale(t *testing.T) {
	dir := t.TempDir()
	files, err := Generate(tree(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := Check(dir, files); len(d) != len(files) {
		t.Fatalf("empty dir: %d differences, want %d", len(d), len(files))
	}
	old := filepath.Join(dir, "man", "tool-removed.1")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	if d := Check(dir, files); d != nil {
		t.Fatalf("after Write: %q", d)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatal("stale page not removed")
	}
	files["man/tool.1"] = []byte("changed\n")
	d := Check(dir, files)
	if len(d) != 1 || !strings.Contains(d[0], "man/tool.1: differs (line 1") {
		t.Fatalf("changed page: %q", d)
	}
}
