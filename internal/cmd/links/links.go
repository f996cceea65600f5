// Package links is "rdmactl links": the reference tools' names as
// symbolic links to rdmactl, for scripts written for those tools.
package links

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/dropin"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/spf13/cobra"
)

// Link is one name's outcome.
type Link struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Target string `json:"target"`
	// Status: "created", "present" (already a link to this rdmactl), or
	// "kept" (another file has the name; it is left alone).
	Status string `json:"status"`
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "links [DIR]",
		Short: "Make the reference tools' names (ibv_devinfo, ibv_devices, ibstat, rdma, ib_write_bw...) links to rdmactl in DIR",
		Long: `Make symbolic links named as the tools rdmactl replaces, pointing to this
rdmactl, in DIR (default: the directory rdmactl is in). Run through such a
link, rdmactl reads that tool's command line and prints what the tool
prints, byte for byte: ` + fmt.Sprint(dropin.Names()) + `.

A name that already exists in DIR is never replaced: it is reported as kept
and the command exits 1. Put DIR ahead of the tools' own directory in PATH
to use the links instead of the tools.`,
		Example: `  rdmactl links ~/bin
  sudo rdmactl links /usr/local/bin
  ~/bin/ibv_devinfo -d rxe0`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err == nil {
				self, err = filepath.EvalSymlinks(self)
			}
			if err != nil {
				return fmt.Errorf("links: cannot find this rdmactl's path: %w", err)
			}
			dir := filepath.Dir(self)
			if len(args) == 1 {
				dir = args[0]
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return cmdutil.WithCode(cmdutil.ExitNotFound, fmt.Errorf("links: %s is not a directory", dir))
			}
			out, kept, err := Make(dir, self)
			if perr := printLinks(a, out); perr != nil {
				return perr
			}
			switch {
			case err != nil:
				return err
			case kept > 0:
				return fmt.Errorf("links: %d name(s) kept as they were: another file has the name", kept)
			}
			return nil
		},
	}
}

// Make creates a link to target in dir for every tool name, never over an
// existing file; it stops at the first error other than a name taken.
func Make(dir, target string) (out []Link, kept int, err error) {
	for _, n := range dropin.Names() {
		l := Link{Name: n, Path: filepath.Join(dir, n), Target: target, Status: "created"}
		err := os.Symlink(target, l.Path)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrExist):
			if t, rerr := os.Readlink(l.Path); rerr == nil && t == target {
				l.Status = "present"
			} else {
				l.Status = "kept"
				kept++
			}
		default:
			return out, kept, fmt.Errorf("links: %w", err)
		}
		out = append(out, l)
	}
	return out, kept, nil
}

func printLinks(a *cmdutil.App, out []Link) error {
	if a.Opts.JSON {
		return cmdutil.PrintList(a, out)
	}
	t := render.NewTable(a.Stdout, "NAME", "PATH", "STATUS")
	for _, l := range out {
		t.Row(l.Name, l.Path, l.Status)
	}
	return t.Flush()
}
