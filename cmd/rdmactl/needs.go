package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// What a command needs of the host beyond its arguments is declared where
// the command is built (needs) and checked in one place before it runs
// (checkNeeds, from the root's PersistentPreRunE), with one wording and one
// exit code per need:
//   - the running kernel (RDMA netlink, or the uverbs devices), which a
//     captured tree (--sysfs-root) does not have: exit 5;
//   - CAP_NET_ADMIN, which the kernel wants for every NLDEV write
//     (drivers/infiniband/core/nldev.c flags them RDMA_NL_ADMIN_PERM):
//     exit 4, before anything is sent.
type need uint8

const (
	needNetlink  need = 1 << iota // NLDEV requests no capture answers
	needUverbs                    // /dev/infiniband/uverbsN
	needNetAdmin                  // an NLDEV write: CAP_NET_ADMIN and netlink
)

// needsKey is the cobra annotation that carries a command's needs.
const needsKey = "rdmactl.needs"

// needs declares what c needs and returns c.
func needs(n need, c *cobra.Command) *cobra.Command {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[needsKey] = strconv.Itoa(int(n))
	return c
}

// needsOf is what c declared (0: nothing).
func needsOf(c *cobra.Command) need {
	n, _ := strconv.Atoi(c.Annotations[needsKey])
	return need(n)
}

// checkNeeds refuses to run c where what it needs is missing.
func (a *app) checkNeeds(c *cobra.Command) error {
	n := needsOf(c)
	what := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
	if a.opts.sysfsRoot != "" && n != 0 {
		via := "RDMA netlink"
		if n&needUverbs != 0 {
			via = "/dev/infiniband/uverbsN"
		}
		return unsupportedf("%s needs the running kernel (%s), which a captured tree (--sysfs-root) does not have: run it on the host itself", what, via)
	}
	if n&needNetAdmin != 0 && !hasNetAdmin() {
		return withCode(exitPermission, fmt.Errorf("%s: permission denied: needs CAP_NET_ADMIN (run as root)", what))
	}
	return nil
}
