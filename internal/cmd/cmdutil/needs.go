package cmdutil

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// What a command needs of the host beyond its arguments is declared where
// the command is built (needs) and checked in one place before it runs
// (CheckNeeds, from the root's PersistentPreRunE), with one wording and one
// exit code per Need:
//   - the running kernel (RDMA netlink, or the uverbs devices), which a
//     captured tree (--sysfs-root) does not have: exit 5;
//   - CAP_NET_ADMIN, which the kernel wants for every NLDEV write
//     (drivers/infiniband/core/nldev.c flags them RDMA_NL_ADMIN_PERM):
//     exit 4, before anything is sent.
type Need uint8

const (
	NeedNetlink  Need = 1 << iota // NLDEV requests no capture answers
	NeedUverbs                    // /dev/infiniband/uverbsN
	NeedNetAdmin                  // an NLDEV write: CAP_NET_ADMIN and netlink
)

// needsKey is the cobra annotation that carries a command's needs.
const needsKey = "rdmactl.needs"

// Needs declares what c Needs and returns c.
func Needs(n Need, c *cobra.Command) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[needsKey] = strconv.Itoa(int(n))
	return c
}

// NeedsOf is what c declared (0: nothing).
func NeedsOf(c *cobra.Command) Need {
	n, _ := strconv.Atoi(c.Annotations[needsKey])
	return Need(n)
}

// CheckNeeds refuses to run c where what it needs is missing.
func (a *App) CheckNeeds(c *cobra.Command) error {
	n := NeedsOf(c)
	what := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	if a.Opts.SysfsRoot != "" && n != 0 {
		via := "RDMA netlink"
		if n&NeedUverbs != 0 {
			via = "/dev/infiniband/uverbsN"
		}
		return Unsupportedf("%s needs the running kernel (%s), which a captured tree (--sysfs-root) does not have: run it on the host itself", what, via)
	}
	if n&NeedNetAdmin != 0 && !HasNetAdmin() {
		return WithCode(ExitPermission, fmt.Errorf("%s: permission denied: needs CAP_NET_ADMIN (run as root)", what))
	}
	return nil
}
