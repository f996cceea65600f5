package nldev

import (
	"errors"
	"net/netip"
	"reflect"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"

	"github.com/rdmactl/rdmactl/internal/nldev/nldevtest"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// message is a request or answer as the fake kernel sees it.
type message struct {
	Type  uint16
	Flags uint16
	Data  []byte
}

// fakeConn is an in-memory kernel behind an nltest connection: requests go
// through mdlayher/netlink's real framing, sequence and dump handling.
type fakeConn struct {
	fn   func(req message) ([]message, error)
	reqs []message
}

func (f *fakeConn) Execute(req message) ([]message, error) {
	f.reqs = append(f.reqs, req)
	// Like the kernel (res_get_common_dumpit): a RES_*_GET dump without
	// a device index is EINVAL.
	if isResObjectOp(req.Type) && parseAttrs(req.Data).u32(attrDevIndex) == nil {
		return nil, syscall.EINVAL
	}
	return f.fn(req)
}

func isResObjectOp(t uint16) bool {
	for _, op := range []uint16{cmdResQPGet, cmdResCMIDGet, cmdResCQGet, cmdResMRGet, cmdResPDGet, cmdResCtxGet, cmdResSRQGet} {
		if t == msgType(op) {
			return true
		}
	}
	return false
}
func (f *fakeConn) Close() error { return nil }

// newFake is a fake kernel behind an nltest connection: fn answers each
// request, nldevtest frames the answers as the kernel does (dumps end in
// NLMSG_DONE; a request asking for an acknowledgement gets one) and an
// errno from fn becomes the kernel's NLMSG_ERROR.
func newFake(fn func(req message) ([]message, error)) (*Client, *fakeConn) {
	f := &fakeConn{fn: fn}
	nc := nltest.Dial(func(reqs []netlink.Message) ([]netlink.Message, error) {
		req := reqs[0]
		out, err := f.Execute(message{Type: uint16(req.Header.Type), Flags: uint16(req.Header.Flags), Data: req.Data})
		var en syscall.Errno
		if errors.As(err, &en) {
			return nldevtest.Refuse(en, req)
		}
		if err != nil {
			return nil, err
		}
		res := make([]netlink.Message, len(out))
		for i, m := range out {
			res[i] = netlink.Message{Header: netlink.Header{Type: netlink.HeaderType(m.Type), Flags: netlink.HeaderFlags(m.Flags)}, Data: m.Data}
		}
		return nldevtest.Reply(req, res...)
	})
	return &Client{c: nc}, f
}

// Values two rxe devices had on Debian's 6.1 kernel, as rdma -j -d dev
// show printed them.
const (
	guidRxe0 = 0xa86c01fffecc54ed
	guidRxe1 = 0xa07aa8fffe8dd35c
	// rxe's caps: the bits of the names rdma -d dev show printed.
	capsRxe = 1<<1 | 1<<2 | 1<<4 | 1<<5 | 1<<6 | 1<<10 | 1<<11 | 1<<12 | 1<<13 | 1<<17 | 1<<21 | 1<<24
)

func devMsg(idx uint32, name string, guid uint64) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	e.u32(attrPortIndex, 1)
	e.u64(attrCapFlags, capsRxe)
	e.str(attrFWVersion, "")
	e.u64(attrNodeGUID, guid)
	e.u64(attrSysImageGUID, guid)
	e.u8(attrDevNodeType, 1)
	e.u8(attrDevDIM, 0)
	e.str(attrDevProtocol, "roce")
	return e.b
}

func portMsg(idx uint32, name string, ndev string, ndevIdx uint32) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	e.u32(attrPortIndex, 1)
	e.u8(attrPortState, 4)
	e.u8(attrPortPhysState, 5)
	e.u32(attrNdevIndex, ndevIdx)
	e.str(attrNdevName, ndev)
	return e.b
}

// twoRxe answers CMD_GET and PORT_GET like the VM's rxe0/rxe1.
func twoRxe(req message) ([]message, error) {
	switch req.Type {
	case msgType(cmdGet):
		return []message{{Type: req.Type, Data: devMsg(1, "rxe1", guidRxe1)}, {Type: req.Type, Data: devMsg(0, "rxe0", guidRxe0)}}, nil
	case msgType(cmdPortGet):
		a := parseAttrs(req.Data)
		switch *a.u32(attrDevIndex) {
		case 0:
			return []message{{Type: req.Type, Data: portMsg(0, "rxe0", "vrxe0", 4)}}, nil
		case 1:
			return []message{{Type: req.Type, Data: portMsg(1, "rxe1", "vrxe1", 6)}}, nil
		}
		return nil, syscall.EINVAL
	}
	return nil, syscall.EOPNOTSUPP
}

func TestDevices(t *testing.T) {
	c, f := newFake(twoRxe)
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Name != "rxe0" || devs[1].Name != "rxe1" {
		t.Fatalf("devices %+v, want rxe0, rxe1 by index", devs)
	}
	d := devs[0]
	if vocab.GUID(*d.NodeGUID).String() != "a86c:01ff:fecc:54ed" || vocab.GUID(*d.SysImageGUID).String() != "a86c:01ff:fecc:54ed" {
		t.Errorf("guids %s %s", vocab.GUID(*d.NodeGUID).String(), vocab.GUID(*d.SysImageGUID).String())
	}
	if NodeTypeName(*d.NodeType) != "ca" || d.Protocol != "roce" || *d.NumPorts != 1 || *d.DIM {
		t.Errorf("device %+v", d)
	}
	want := []string{"BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "AUTO_PATH_MIG", "CHANGE_PHY_PORT", "UD_AV_PORT_ENFORCE_PORT_ENFORCE", "PORT_ACTIVE_EVENT", "SYS_IMAGE_GUID", "RC_RNR_NAK_GEN", "SRQ_RESIZE", "MEM_WINDOW", "MEM_MGT_EXTENSIONS", "MEM_WINDOW_TYPE_2B"}
	if got := DeviceCapNames(*d.Caps); !reflect.DeepEqual(got, want) {
		t.Errorf("caps %v\nwant %v", got, want)
	}
	if r := f.reqs[0]; r.Type != 5<<10|1 || r.Flags != flagRequest|flagDump {
		t.Errorf("request type %#x flags %#x, want 0x1401 and a dump", r.Type, r.Flags)
	}
	if _, err := c.Device("mlx5_0"); err == nil || err.Error() != `no RDMA device "mlx5_0" (devices: rxe0, rxe1)` {
		t.Errorf("unknown device: %v", err)
	}
}

func TestPorts(t *testing.T) {
	c, _ := newFake(twoRxe)
	ps, err := c.Ports()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("ports %+v", ps)
	}
	p := ps[1]
	if p.DevName != "rxe1" || p.Port != 1 || vocab.PortState(*p.State).String() != "ACTIVE" || vocab.PhysState(*p.PhysState).String() != "LINK_UP" ||
		p.NetdevName != "vrxe1" || *p.NetdevIndex != 6 || p.LID != nil || p.Caps != nil {
		t.Errorf("port %+v", p)
	}
	if _, err := c.Port("rxe0", 2); err == nil || err.Error() != "no RDMA port rxe0/2 (ports: rxe0/1)" {
		t.Errorf("unknown port: %v", err)
	}
	if _, err := c.Port("rxe0", 1); err != nil {
		t.Error(err)
	}
}

func TestKernelError(t *testing.T) {
	c, _ := newFake(func(req message) ([]message, error) {
		if req.Type == msgType(cmdGet) {
			return twoRxe(req)
		}
		return nil, syscall.EPERM
	})
	_, err := c.QPs()
	var ke *KernelError
	if !errors.As(err, &ke) || !errors.Is(err, syscall.EPERM) || ke.Op != "RES_QP_GET" {
		t.Fatalf("err %v", err)
	}
}

// TestResDumpPerDevice: every resource dump is one request per device,
// each with its DEV_INDEX (the kernel refuses a dump without one).
func TestResDumpPerDevice(t *testing.T) {
	c, f := newFake(func(req message) ([]message, error) {
		if req.Type == msgType(cmdGet) {
			return twoRxe(req)
		}
		a := parseAttrs(req.Data)
		idx := *a.u32(attrDevIndex)
		var q encoder
		q.u32(attrResLQPN, 1)
		return []message{{Type: req.Type, Data: resMsg(idx, []string{"rxe0", "rxe1"}[idx], nest(attrResQP, nest(attrResQPEntry, q.b)))}}, nil
	})
	qps, err := c.QPs()
	if err != nil || len(qps) != 2 || qps[0].DevName != "rxe0" || qps[1].DevName != "rxe1" || qps[1].DevIndex != 1 {
		t.Fatalf("qps %+v %v", qps, err)
	}
	var n int
	for _, r := range f.reqs {
		if r.Type == msgType(cmdResQPGet) {
			n++
			if r.Flags&flagDump != flagDump {
				t.Errorf("RES_QP_GET without NLM_F_DUMP")
			}
		}
	}
	if n != 2 {
		t.Errorf("%d RES_QP_GET requests, want one per device (2)", n)
	}
}

func nest(t uint16, parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	var e encoder
	e.put(t|0x8000, b) // NLA_F_NESTED, as the kernel sets it
	return e.b
}

func resMsg(idx uint32, name string, table []byte) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	return append(e.b, table...)
}

func TestResourceSummary(t *testing.T) {
	ent := func(n string, v uint64) []byte {
		var e encoder
		e.str(attrResSummaryName, n)
		e.u64(attrResSummaryCurr, v)
		return nest(attrResSummaryEntry, e.b)
	}
	tbl := nest(attrResSummary, ent("pd", 1), ent("cq", 1), ent("qp", 1), ent("cm_id", 0), ent("mr", 0), ent("ctx", 0), ent("srq", 0))
	c, _ := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: resMsg(0, "rxe0", tbl)}}, nil
	})
	s, err := c.ResourceSummary()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 1 || !reflect.DeepEqual(s[0].Names, []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"}) || s[0].Counts["qp"] != 1 {
		t.Fatalf("summary %+v", s)
	}
}

func TestQPs(t *testing.T) {
	// rdma_res_show_qp_active.json: a user RC QP and the kernel's GSI QP.
	var u, k encoder
	u.u32(attrPortIndex, 1)
	u.u32(attrResLQPN, 26)
	u.u32(attrResRQPN, 22)
	u.u32(attrResRQPSN, 8015148)
	u.u32(attrResSQPSN, 0)
	u.u8(attrResPathMigState, 0)
	u.u8(attrResType, 2)
	u.u8(attrResState, 2)
	u.u32(attrResPDN, 12)
	u.u32(attrResPID, 360)
	k.u32(attrPortIndex, 1)
	k.u32(attrResLQPN, 1)
	k.u32(attrResSQPSN, 12)
	k.u8(attrResType, 1)
	k.u8(attrResState, 3)
	k.str(attrResKernName, "ib_core")
	tbl := nest(attrResQP, nest(attrResQPEntry, u.b), nest(attrResQPEntry, k.b))
	c, _ := newFake(func(req message) ([]message, error) {
		return []message{{Type: req.Type, Data: resMsg(0, "rxe0", tbl)}}, nil
	})
	qps, err := c.QPs()
	if err != nil {
		t.Fatal(err)
	}
	if len(qps) != 2 {
		t.Fatalf("qps %+v", qps)
	}
	q := qps[0]
	if q.DevName != "rxe0" || *q.LQPN != 26 || *q.RQPN != 22 || QPTypeName(*q.Type) != "RC" || QPStateName(*q.State) != "RTR" ||
		*q.RQPSN != 8015148 || PathMigStateName(*q.PathMigState) != "MIGRATED" || *q.PDN != 12 || *q.PID != 360 || q.KernName != "" {
		t.Errorf("user qp %+v", q)
	}
	q = qps[1]
	if *q.LQPN != 1 || QPTypeName(*q.Type) != "GSI" || QPStateName(*q.State) != "RTS" || q.RQPN != nil || q.PID != nil || q.KernName != "ib_core" || *q.SQPSN != 12 {
		t.Errorf("kernel qp %+v", q)
	}
}

func TestCQsPDsMRsCtxs(t *testing.T) {
	var cq, pd, mr, ctx encoder
	cq.u32(attrResCQN, 15)
	cq.u32(attrResCQE, 255)
	cq.u64(attrResUseCnt, 2)
	cq.u8(attrDevDIM, 0)
	cq.u32(attrResCtxN, 11)
	cq.u32(attrResPID, 360)
	pd.u32(attrResPDN, 0)
	pd.u32(attrResLocalDMALKey, 0x105)
	pd.u64(attrResUseCnt, 1)
	pd.str(attrResKernName, "ib_core")
	mr.u32(attrResMRN, 3)
	mr.u32(attrResRKey, 0x1234)
	mr.u32(attrResLKey, 0x1234)
	mr.u64(attrResIOVA, 0x7f0000001000)
	mr.u64(attrResMRLen, 65536)
	mr.u32(attrResPDN, 12)
	mr.u32(attrResPID, 360)
	ctx.u32(attrResCtxN, 11)
	ctx.u32(attrResPID, 360)
	c, _ := newFake(func(req message) ([]message, error) {
		var tbl []byte
		switch req.Type {
		case msgType(cmdResCQGet):
			tbl = nest(attrResCQ, nest(attrResCQEntry, cq.b))
		case msgType(cmdResPDGet):
			tbl = nest(attrResPD, nest(attrResPDEntry, pd.b))
		case msgType(cmdResMRGet):
			tbl = nest(attrResMR, nest(attrResMREntry, mr.b))
		case msgType(cmdResCtxGet):
			tbl = nest(attrResCtx, nest(attrResCtxEntry, ctx.b))
		}
		return []message{{Type: req.Type, Data: resMsg(0, "rxe0", tbl)}}, nil
	})
	cqs, err := c.CQs()
	if err != nil || len(cqs) != 1 || *cqs[0].CQN != 15 || *cqs[0].CQE != 255 || *cqs[0].Users != 2 || *cqs[0].DIM || *cqs[0].CtxN != 11 || cqs[0].PollCtx != nil {
		t.Errorf("cqs %+v %v", cqs, err)
	}
	pds, err := c.PDs()
	if err != nil || len(pds) != 1 || *pds[0].LocalDMALKey != 0x105 || pds[0].KernName != "ib_core" || pds[0].UnsafeGlobalRKey != nil {
		t.Errorf("pds %+v %v", pds, err)
	}
	mrs, err := c.MRs()
	if err != nil || len(mrs) != 1 || *mrs[0].IOVA != 0x7f0000001000 || *mrs[0].Len != 65536 || *mrs[0].RKey != 0x1234 {
		t.Errorf("mrs %+v %v", mrs, err)
	}
	ctxs, err := c.Contexts()
	if err != nil || len(ctxs) != 1 || *ctxs[0].CtxN != 11 || *ctxs[0].PID != 360 {
		t.Errorf("ctxs %+v %v", ctxs, err)
	}
}

func TestCMIDsSRQs(t *testing.T) {
	var cm, srq, q1, q2 encoder
	cm.u32(attrPortIndex, 1)
	cm.u32(attrResCMIDN, 7)
	cm.u32(attrResLQPN, 538)
	cm.u8(attrResType, 2)
	cm.u8(attrResState, 5)
	cm.u32(attrResPS, 0x106)
	cm.u32(attrResPID, 30492)
	src := make([]byte, 128)
	src[0] = 2 // AF_INET, host order on little-endian
	src[2], src[3] = 0xaa, 0x96
	copy(src[4:], []byte{172, 16, 99, 1})
	cm.put(attrResSrcAddr, src)
	q1.u32(attrResLQPN, 18)
	q2.u32(attrMinRange, 126)
	q2.u32(attrMaxRange, 128)
	srq.u32(attrResSRQN, 0)
	srq.u8(attrResType, 0)
	srq.u32(attrResPDN, 5)
	srq.u32(attrResCQN, 3)
	srq.b = append(srq.b, nest(attrResQP, nest(attrResQPEntry, q1.b), nest(attrResQPEntry, q2.b))...)
	srq.u32(attrResPID, 7775)
	c, _ := newFake(func(req message) ([]message, error) {
		if req.Type == msgType(cmdResCMIDGet) {
			return []message{{Type: req.Type, Data: resMsg(3, "mlx4_0", nest(attrResCMID, nest(attrResCMIDEntry, cm.b)))}}, nil
		}
		return []message{{Type: req.Type, Data: resMsg(1, "hns_0", nest(attrResSRQ, nest(attrResSRQEntry, srq.b)))}}, nil
	})
	ids, err := c.CMIDs()
	if err != nil || len(ids) != 1 {
		t.Fatalf("cm ids %+v %v", ids, err)
	}
	id := ids[0]
	if PSName(*id.PS) != "TCP" || CMStateName(*id.State) != "CONNECT" || id.SrcAddr != netip.MustParseAddrPort("172.16.99.1:43670") || id.DstAddr.IsValid() {
		t.Errorf("cm id %+v", id)
	}
	srqs, err := c.SRQs()
	if err != nil || len(srqs) != 1 || SRQTypeName(*srqs[0].Type) != "BASIC" || !reflect.DeepEqual(srqs[0].QPs, []QPRange{{18, 18}, {126, 128}}) || *srqs[0].PID != 7775 {
		t.Errorf("srqs %+v %v", srqs, err)
	}
}

func TestStatsChardevSystem(t *testing.T) {
	c, f := newFake(func(req message) ([]message, error) {
		var e encoder
		switch req.Type {
		case msgType(cmdStatGet):
			var a, b encoder
			a.str(attrStatHWCounterName, "sent_pkts")
			a.u64(attrStatHWCounterValue, 7)
			b.str(attrStatHWCounterName, "rcvd_pkts")
			b.u64(attrStatHWCounterValue, 9)
			e.u32(attrDevIndex, 0)
			e.u32(attrPortIndex, 1)
			e.b = append(e.b, nest(attrStatHWCounters, nest(attrStatHWCounterEntry, a.b), nest(attrStatHWCounterEntry, b.b))...)
		case msgType(cmdGetChardev):
			e.u64(attrChardev, 231<<8|192) // huge_encode_dev(MKDEV(231, 192))
			e.u64(attrChardevABI, 2)
			e.str(attrChardevName, "uverbs0")
			e.u32(attrUverbsDriverID, 12)
		case msgType(cmdSysGet):
			e.u8(attrSysNetnsMode, 1)
			e.u8(attrSysCopyOnFork, 1)
		default:
			return twoRxe(req)
		}
		return []message{{Type: req.Type, Data: e.b}}, nil
	})
	st, err := c.PortStatistics(0, 1)
	if err != nil || !reflect.DeepEqual(st, []Counter{{"sent_pkts", 7}, {"rcvd_pkts", 9}}) {
		t.Errorf("stats %+v %v", st, err)
	}
	ch, err := c.Chardev(0, "uverbs")
	if err != nil || ch.Name != "uverbs0" || *ch.ABI != 2 || *ch.Major != 231 || *ch.Minor != 192 || *ch.DriverID != 12 {
		t.Errorf("chardev %+v %v", ch, err)
	}
	req := parseAttrs(f.reqs[len(f.reqs)-1].Data)
	if req.str(attrChardevType) != "uverbs" || *req.u32(attrDevIndex) != 0 {
		t.Errorf("GET_CHARDEV request %+v", req.list)
	}
	s, err := c.System()
	if err != nil || !*s.NetnsShared || !*s.CopyOnFork || s.PrivilegedQKey != nil {
		t.Errorf("system %+v %v", s, err)
	}
}

// Malformed attributes: a wrong length leaves the field missing, a
// truncated tail keeps what came before.
func TestMalformed(t *testing.T) {
	var e encoder
	e.u32(attrDevIndex, 3)
	e.str(attrDevName, "mlx5_0")
	e.put(attrNodeGUID, []byte{1, 2, 3}) // u64 with 3 bytes
	e.u8(attrDevNodeType, 1)
	e.put(attrPortIndex, []byte{1, 0, 0, 0, 0, 0}) // u32 with 6 bytes
	good := len(e.b)
	e.u64(attrCapFlags, 1)
	b := e.b[:good+6] // cut inside the caps attribute
	d := decodeDevice(b)
	if d.Index != 3 || d.Name != "mlx5_0" || d.NodeGUID != nil || d.NumPorts != nil || d.Caps != nil || *d.NodeType != 1 {
		t.Errorf("device %+v", d)
	}
	// A header claiming more than there is.
	if a := parseAttrs([]byte{200, 0, 1, 0, 1, 2}); len(a.list) != 0 {
		t.Errorf("attrs %+v", a.list)
	}
}

// This host has no RDMA: Dial must say so with ErrNoRDMA. On a kernel with
// ib_core it must work.
func TestDial(t *testing.T) {
	c, err := Dial()
	if err != nil {
		if !errors.Is(err, ErrNoRDMA) {
			t.Fatalf("Dial: %v, want ErrNoRDMA or success", err)
		}
		return
	}
	c.Close()
}
