package verbs

import (
	"fmt"
	"slices"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// abiMcast is struct ib_uverbs_attach_mcast and ib_uverbs_detach_mcast
// (include/uapi/rdma/ib_user_verbs.h, 24 B; the same layout). No
// response.
type abiMcast struct {
	GID      [16]byte
	QPHandle uint32
	MLID     uint16
	Reserved uint16
}

// mcastGroup is one group a QP is attached to.
type mcastGroup struct {
	gid  [16]byte
	mlid uint16
}

// AttachMcast attaches the UD QP to the multicast group gid (network
// order) with LID mlid (0 on RoCE), so that it receives what is sent to
// the group (ATTACH_MCAST, as rdma-core's ibv_attach_mcast). On
// InfiniBand the group must also be joined through the subnet manager;
// on RoCE the kernel maps gid to the netdev's multicast address. Close
// detaches the QP from its groups first: the kernel refuses to destroy
// an attached QP (EBUSY, drivers/infiniband/core/verbs.c ib_destroy_qp).
func (qp *QP) AttachMcast(gid [16]byte, mlid uint16) error {
	if qp.prov == nil {
		return fmt.Errorf("verbs: attach to a multicast group: the QP is closed")
	}
	g := mcastGroup{gid, mlid}
	if slices.Contains(qp.mcast, g) {
		return nil
	}
	cmd := abiMcast{GID: gid, QPHandle: qp.handle, MLID: mlid}
	if err := qp.ctx.writeCmd(cmdAttachMcast, rawmem.Of(&cmd), nil, nil, nil); err != nil {
		return fmt.Errorf("verbs: attach QP %d to multicast group: %w", qp.qpn, err)
	}
	qp.mcast = append(qp.mcast, g)
	return nil
}

// DetachMcast detaches the QP from the group AttachMcast attached it to
// (DETACH_MCAST).
func (qp *QP) DetachMcast(gid [16]byte, mlid uint16) error {
	i := slices.Index(qp.mcast, mcastGroup{gid, mlid})
	if i < 0 || qp.prov == nil {
		return nil
	}
	cmd := abiMcast{GID: gid, QPHandle: qp.handle, MLID: mlid}
	if err := qp.ctx.writeCmd(cmdDetachMcast, rawmem.Of(&cmd), nil, nil, nil); err != nil {
		return fmt.Errorf("verbs: detach QP %d from multicast group: %w", qp.qpn, err)
	}
	qp.mcast = slices.Delete(qp.mcast, i, i+1)
	return nil
}

// detachAll detaches the QP from every group it is attached to.
func (qp *QP) detachAll() error {
	for len(qp.mcast) > 0 {
		g := qp.mcast[len(qp.mcast)-1]
		if err := qp.DetachMcast(g.gid, g.mlid); err != nil {
			return err
		}
	}
	return nil
}
