package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/kfeat"
)

// groupNotify is RDMA_NL_GROUP_NOTIFY (rdma_netlink.h of 6.9+; Debian 12's
// 6.1 headers stop at RDMA_NL_GROUP_LS = 3): the multicast group of NLDEV
// notifications (device registration, removal, netdev attach/detach).
const groupNotify = 4

// HasNotify reports whether the kernel has the NLDEV notification group,
// probed once per process (kfeat.NLDEVNotify): joining a group beyond
// the family's count fails with EINVAL. Joining needs no privilege.
func HasNotify() bool {
	return kfeat.Has(kfeat.NLDEVNotify, func() (bool, string) {
		c, err := dialConn()
		if err != nil {
			return false, err.Error()
		}
		defer c.Close()
		if err := c.JoinGroup(groupNotify); err != nil {
			return false, fmt.Sprintf("joining RDMA netlink group %d: %v", groupNotify, errName(err))
		}
		return true, fmt.Sprintf("joined RDMA netlink group %d", groupNotify)
	})
}

func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}
