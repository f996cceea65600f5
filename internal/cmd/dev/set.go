package dev

import (
	"errors"
	"fmt"
	"github.com/rdmactl/rdmactl/internal/complete"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// rdmactl dev set DEV name|netns|adaptive-moderation VALUE, as "rdma dev
// set": one setting per run, as rdma takes it.

// netnsRunDir is where 'ip netns add' puts its namespaces (iproute2's
// NETNS_RUN_DIR); a name with a '/' is a path, as rdma takes it.
var netnsRunDir = "/run/netns"

func newDevSetCmd(a *cmdutil.App) *cobra.Command {
	return cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "set DEV name|netns|adaptive-moderation VALUE",
		Short: "Rename a device, move it to a network namespace, or set adaptive moderation (needs CAP_NET_ADMIN)",
		Long: `Change one setting of the RDMA device DEV, as 'rdma dev set':

  name NEWNAME                  rename it (at most 63 bytes; no '%', '/' or spaces)
  netns NSNAME                  move it to the network namespace NSNAME
                                (/run/netns/NSNAME, as 'ip netns add' makes it;
                                a path with a '/' is opened as it is; a PID
                                names that process's namespace)
  adaptive-moderation on|off    adaptive interrupt moderation of its kernel CQs

Prints nothing on success. An unknown device or namespace is exit 3, a
name in use exit 1, a kernel or device that cannot do it exit 5 (moving
needs netns mode exclusive and a driver that can detach user contexts:
rxe and siw cannot), no CAP_NET_ADMIN exit 4.`,
		Example: `  rdmactl dev set rxe0 name rxe_a
  rdmactl dev set mlx5_0 netns blue
  rdmactl dev set mlx5_0 adaptive-moderation on`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 3 {
				return cmdutil.UsageErrorf("dev set: needs DEV and one setting: name NEWNAME, netns NSNAME or adaptive-moderation on|off")
			}
			kw, err := cmdutil.Keywords("dev set", args[1:], "name", "netns", "adaptive-moderation")
			if err != nil {
				return err
			}
			return runDevSet(a, args[0], kw)
		},
		ValidArgsFunction: completeDevSet,
	})
}

func runDevSet(a *cmdutil.App, dev string, kw map[string]string) error {
	var nsFD int = -1
	if v, ok := kw["name"]; ok {
		if err := cmdutil.CheckDevName("dev set name", v); err != nil {
			return err
		}
	}
	var dim bool
	if v, ok := kw["adaptive-moderation"]; ok {
		on, err := cmdutil.ParseOnOff("dev set adaptive-moderation", v)
		if err != nil {
			return err
		}
		dim = on
	}
	if v, ok := kw["netns"]; ok {
		fd, err := openNetns(v)
		if err != nil {
			return err
		}
		nsFD = fd
		defer unix.Close(fd)
	}
	c, _, closeFn, err := a.OpenWrite()
	if err != nil {
		return err
	}
	defer closeFn()
	d, err := c.Device(dev)
	if err != nil {
		return err
	}
	switch {
	case kw["name"] != "":
		name := kw["name"]
		what := fmt.Sprintf("dev set %s name %s", dev, name)
		if name != dev {
			if _, err := c.Device(name); err == nil {
				return cmdutil.WithCode(cmdutil.ExitFailure, fmt.Errorf("%s: an RDMA device called %s exists already", what, name))
			}
		}
		return cmdutil.WriteError(what, c.Rename(d.Index, name), map[syscall.Errno]cmdutil.Refusal{
			syscall.EEXIST: {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("an RDMA device called %s exists already (EEXIST)", name)},
			syscall.EINVAL: {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("the kernel refused the name %q (EINVAL)", name)},
		})
	case nsFD >= 0:
		what := fmt.Sprintf("dev set %s netns %s", dev, kw["netns"])
		why := "the driver cannot detach user contexts, which a move needs (rxe and siw cannot)"
		if st, err := c.System(); err == nil && st.NetnsShared != nil && *st.NetnsShared {
			why = "the RDMA subsystem is in shared netns mode, where devices do not move (rdmactl system set netns exclusive), or the driver cannot detach user contexts (rxe and siw cannot)"
		}
		return cmdutil.WriteError(what, c.SetNetns(d.Index, nsFD), map[syscall.Errno]cmdutil.Refusal{
			syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: "the kernel refused (EOPNOTSUPP): " + why},
			syscall.EBUSY:      {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("%s is in use (EBUSY): close what holds it open (rdmactl res ctx) and retry", dev)},
			syscall.EINVAL:     {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("the kernel refused (EINVAL): %s is not a network namespace it can move to", kw["netns"])},
		})
	default:
		what := fmt.Sprintf("dev set %s adaptive-moderation %s", dev, kw["adaptive-moderation"])
		return cmdutil.WriteError(what, c.SetDIM(d.Index, dim), map[syscall.Errno]cmdutil.Refusal{
			syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s has no adaptive moderation (EOPNOTSUPP)", dev)},
		})
	}
}

// openNetns opens a network namespace as rdma (iproute2's netns_get_fd)
// does: NAME is /run/netns/NAME, a name with a '/' a path. An unknown name
// is exit 3, listing the namespaces that exist.
func openNetns(name string) (int, error) {
	if name == "" {
		return -1, cmdutil.UsageErrorf("dev set netns: the namespace name is empty")
	}
	p := name
	if !strings.Contains(name, "/") {
		p = filepath.Join(netnsRunDir, name)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	if errors.Is(err, fs.ErrNotExist) && !strings.Contains(name, "/") {
		// Newer rdma also takes a PID: that process's namespace.
		if pid, perr := strconv.ParseUint(name, 10, 31); perr == nil && pid > 0 {
			p = filepath.Join("/proc", name, "ns", "net")
			if fd, err = unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
				return fd, nil
			}
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		have := netnsNames()
		list := "none"
		if len(have) > 0 {
			list = strings.Join(have, ", ")
		}
		return -1, cmdutil.WithCode(cmdutil.ExitNotFound, fmt.Errorf("no network namespace %q (%s: %s)", name, netnsRunDir, list))
	case errors.Is(err, fs.ErrPermission):
		return -1, cmdutil.WithCode(cmdutil.ExitPermission, fmt.Errorf("network namespace %q: %s: permission denied", name, p))
	}
	return -1, fmt.Errorf("network namespace %q: %s: %w", name, p, err)
}

// netnsNames lists the named network namespaces (ip netns list).
func netnsNames() []string {
	ents, err := os.ReadDir(netnsRunDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// completeDevSet completes "dev set DEV KEY VALUE": devices, the keys,
// then netns names or on|off.
func completeDevSet(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return complete.Devices(cmd, args, toComplete)
	case 1:
		return cmdutil.Prefixed(toComplete, "name", "netns", "adaptive-moderation"), cobra.ShellCompDirectiveNoFileComp
	case 2:
		switch args[1] {
		case "netns":
			return cmdutil.Prefixed(toComplete, netnsNames()...), cobra.ShellCompDirectiveNoFileComp
		case "adaptive-moderation":
			return cmdutil.Prefixed(toComplete, "on", "off"), cobra.ShellCompDirectiveNoFileComp
		}
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}
