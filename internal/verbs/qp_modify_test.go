package verbs

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

func TestTransitionMasks(t *testing.T) {
	// The RC masks rdma-core's libibverbs/examples/rc_pingpong.c uses, seen
	// accepted on rxe (kernel 6.1); UC/UD per the kernel's qp_state_table
	// (drivers/infiniband/core/verbs.c).
	cases := []struct {
		name string
		got  QPAttrMask
		want QPAttrMask
	}{
		{"RC init", func() QPAttrMask { _, m := initMods(QPTypeRC, InitAttr{}); return m }(), 0x39},
		{"RC rtr", func() QPAttrMask { _, m := rtrMods(QPTypeRC, RTRAttr{}); return m }(), 0x129181},
		{"RC rts", func() QPAttrMask { _, m := rtsMods(QPTypeRC, RTSAttr{}); return m }(), 0x12e01},
		{"UC init", func() QPAttrMask { _, m := initMods(QPTypeUC, InitAttr{}); return m }(), 0x39},
		{"UC rtr", func() QPAttrMask { _, m := rtrMods(QPTypeUC, RTRAttr{}); return m }(), 0x101181},
		{"UC rts", func() QPAttrMask { _, m := rtsMods(QPTypeUC, RTSAttr{}); return m }(), 0x10001},
		{"UD init", func() QPAttrMask { _, m := initMods(QPTypeUD, InitAttr{}); return m }(), 0x71},
		{"UD rtr", func() QPAttrMask { _, m := rtrMods(QPTypeUD, RTRAttr{}); return m }(), 0x1},
		{"UD rts", func() QPAttrMask { _, m := rtsMods(QPTypeUD, RTSAttr{}); return m }(), 0x10001},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: mask %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

func TestBuildModifyQPRTR(t *testing.T) {
	c := (&ConnectAttr{SGIDIndex: 1, Local: PathInfo{QPN: 17, PSN: 117},
		Remote: PathInfo{QPN: 18, PSN: 0x1000076, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 15: 2}}}).withDefaults()
	_, rtr, rts := c.stages()
	a, mask := rtrMods(QPTypeRC, rtr)
	m := buildModifyQP(4, &a, mask)
	if m.QPHandle != 4 || m.AttrMask != 0x129181 || m.QPState != 2 || m.PathMTU != 3 || m.DestQPNum != 18 ||
		m.RQPSN != 0x76 || m.MaxDestRdAtomic != 1 || m.MinRNRTimer != 12 {
		t.Errorf("RTR core fields %+v", m)
	}
	d := m.Dest
	if d.IsGlobal != 1 || d.PortNum != 1 || d.SGIDIndex != 1 || d.HopLimit != 64 || d.DGID[12] != 10 || d.DGID[15] != 2 {
		t.Errorf("RTR dest %+v", d)
	}
	a, mask = rtsMods(QPTypeRC, rts)
	m = buildModifyQP(4, &a, mask)
	if m.SQPSN != 117 || m.Timeout != 14 || m.RetryCnt != 7 || m.RNRRetry != 7 || m.MaxRdAtomic != 1 || m.QPState != 3 {
		t.Errorf("RTS %+v", m)
	}
	a, mask = initMods(QPTypeRC, InitAttr{Port: 1, Access: c.Access})
	m = buildModifyQP(4, &a, mask)
	if m.QPAccessFlags != 7 || m.PortNum != 1 || m.Dest != (abiQPDest{}) {
		t.Errorf("INIT %+v", m)
	}
	if QPStateRTS.String() != "RTS" || QPState(9).String() != "QPState(9)" || vocab.MTU1024.Bytes() != 1024 {
		t.Error("String/Bytes")
	}
}

func TestConnectAttrInfiniBand(t *testing.T) {
	// No GID: an InfiniBand path by LID and SL, without a GRH.
	c := (&ConnectAttr{Port: 2, SL: 3, Local: PathInfo{QPN: 5, PSN: 1, LID: 7}, Remote: PathInfo{QPN: 6, PSN: 2, LID: 9}}).withDefaults()
	ini, rtr, rts := c.stages()
	if c.Global || rtr.Dest.IsGlobal || rtr.Dest.DLID != 9 || rtr.Dest.SL != 3 || rtr.Dest.Port != 2 || ini.Port != 2 {
		t.Errorf("IB path: %+v / %+v", c, rtr.Dest)
	}
	a, mask := rtrMods(QPTypeRC, rtr)
	m := buildModifyQP(1, &a, mask)
	if m.Dest.IsGlobal != 0 || m.Dest.DLID != 9 || m.Dest.SL != 3 || m.Dest.PortNum != 2 || m.DestQPNum != 6 || m.RQPSN != 2 {
		t.Errorf("IB RTR %+v", m)
	}
	if rts.SQPSN != 1 {
		t.Errorf("RTS SQ PSN %d", rts.SQPSN)
	}
	// UD ignores the remote; INIT carries the QKey.
	u := (&ConnectAttr{QKey: 0x11111111}).withDefaults()
	ini, _, _ = u.stages()
	a, mask = initMods(QPTypeUD, ini)
	m = buildModifyQP(1, &a, mask)
	if m.QKey != 0x11111111 || m.QPAccessFlags != 0 || m.PortNum != 1 {
		t.Errorf("UD INIT %+v", m)
	}
}
