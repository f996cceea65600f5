package inventory

import "github.com/rdmactl/rdmactl/internal/nldev"

// System is the RDMA subsystem's settings, what rdma system show prints
// (NLDEV SYS_GET, Linux 5.2+). A nil field is one the kernel did not
// report: PrivilegedQKey exists from Linux 6.5 (Debian's 6.1 has it too,
// seen in the VM), CopyOnFork from 5.13.
type System struct {
	NetnsMode      string // "shared" or "exclusive"
	CopyOnFork     *bool  // fork() keeps DMA-pinned pages valid in the child
	PrivilegedQKey *bool  // unprivileged processes may use the privileged Q_Key (0x80000000 and up)
}

type sysState struct {
	done bool
	v    *System
	err  error
}

// System reads the subsystem's settings: one SYS_GET, asked once per
// Source. A kernel without SYS_GET gives an error matching
// nldev.ErrNoSystem; a captured tree, ErrNeedsLive (sysfs does not show
// these settings).
func (s *Source) System() (*System, error) {
	return s.b.system()
}

func systemOf(st *nldev.System) *System {
	v := &System{CopyOnFork: st.CopyOnFork, PrivilegedQKey: st.PrivilegedQKey}
	if st.NetnsShared != nil {
		v.NetnsMode = "exclusive"
		if *st.NetnsShared {
			v.NetnsMode = "shared"
		}
	}
	return v
}
