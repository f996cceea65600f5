package perf

import (
	"errors"
	"fmt"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// verbsDevice implements Device over internal/verbs (rxe, mlx5).
type verbsDevice struct {
	ctx  *verbs.Context
	port uint8
	pd   *verbs.PD
	buf  *verbs.Buffer
	mr   *verbs.MR
	qmrs []*verbs.MR // --mr_per_qp: one a QP
	scq  *verbs.CQ
	rcq  *verbs.CQ
	ch   *verbs.CompChannel // -e
	qps  []*verbs.QP
	srq  *verbs.SRQ
	ahs  []*verbs.AH
	typ  verbs.QPType
	cm   bool // -R: the RDMA CM moves the QPs from RESET (cm_session.go)
}

// OpenDevice opens RDMA device d for a benchmark on port. d comes from
// the caller's lookup (the inventory, which has the driver id from
// netlink; sysfs alone only guesses it, and the driver id picks the data
// path).
func OpenDevice(d verbs.Device, port int) (Device, error) {
	if port < 1 || port > 255 {
		return nil, fmt.Errorf("-i %d: port numbers start at 1", port)
	}
	ctx, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		return nil, err
	}
	return &verbsDevice{ctx: ctx, port: uint8(port)}, nil
}

func (d *verbsDevice) Port() (PortAttr, error) {
	pa, err := d.ctx.QueryPort(d.port)
	if err != nil {
		return PortAttr{}, err
	}
	if pa.State != vocab.PortActive {
		return PortAttr{}, fmt.Errorf("%s port %d is not ACTIVE (state %d); check 'rdmactl link show'", d.ctx.Device().Name, d.port, pa.State)
	}
	// Anything but Ethernet (also "unspecified") is run as InfiniBand.
	out := PortAttr{LinkLayer: vocab.LinkLayerInfiniBand, ActiveMTU: int(pa.ActiveMTU.Bytes()), LID: pa.LID, PKeys: int(pa.PkeyTblLen)}
	if pa.LinkLayer == vocab.LinkLayerEthernet {
		out.LinkLayer = vocab.LinkLayerEthernet
	}
	gids, err := d.ctx.QueryGIDTable(int(max(pa.GIDTblLen, 1)))
	if err != nil {
		return PortAttr{}, err
	}
	for _, g := range gids {
		if g.Port != uint32(d.port) || g.GID == ([16]byte{}) {
			continue
		}
		t := g.Type
		if !t.Known() {
			t = vocab.GIDTypeIB // ranked as IB, as before the type was typed
		}
		out.GIDs = append(out.GIDs, GIDEntry{Index: int(g.Index), GID: g.GID, Type: t})
	}
	if da, err := d.ctx.QueryDevice(); err == nil {
		out.MaxOutRead = int(da.MaxQPRdAtom)
		out.VendorPartID = da.VendorPartID
	}
	return out, nil
}

func (d *verbsDevice) Setup(cfg SetupConfig) (*Resources, error) {
	var err error
	d.typ = cfg.Type
	if cfg.ODP {
		if err := d.checkODP(); err != nil {
			return nil, err
		}
	}
	if d.pd, err = d.ctx.AllocPD(); err != nil {
		return nil, err
	}
	switch {
	case cfg.MmapFile != "":
		if d.buf, err = verbs.NewFileBuffer(cfg.MmapFile, cfg.MmapOffset, cfg.BufSize); err != nil {
			return nil, fmt.Errorf("--mmap: %w", err)
		}
	case cfg.HugePages:
		if d.buf, err = verbs.NewHugeBuffer(cfg.BufSize); err != nil {
			return nil, fmt.Errorf("--use_hugepages: %w", err)
		}
	case cfg.OnNUMANode:
		// Unbound where the kernel cannot bind (perftest goes on too).
		if d.buf, _, err = verbs.NewBufferOnNode(cfg.BufSize, cfg.NUMANode); err != nil {
			return nil, err
		}
	default:
		if d.buf, err = verbs.NewBuffer(cfg.BufSize); err != nil {
			return nil, err
		}
	}
	mrAccess := verbs.AccessAll
	if cfg.Atomic {
		mrAccess |= verbs.AccessRemoteAtomic
	}
	if cfg.ODP {
		mrAccess |= verbs.AccessOnDemand
	}
	if cfg.RelaxedOrdering {
		mrAccess |= verbs.AccessRelaxedOrder
	}
	var keys []QPKeys
	if cfg.MRPerQP {
		if keys, err = d.regPerQP(cfg, mrAccess); err != nil {
			return nil, err
		}
	} else if d.mr, err = d.pd.RegMR(d.buf, mrAccess); err != nil {
		if cfg.ODP {
			return nil, fmt.Errorf("--odp: registering memory with On-Demand Paging: %w", err)
		}
		return nil, err
	} else {
		keys = []QPKeys{{LKey: d.mr.LKey, RKey: d.mr.RKey}}
	}
	if err := d.createCQs(cfg); err != nil {
		return nil, err
	}
	res := &Resources{Buf: d.buf.Bytes(), Addr: d.buf.Addr(), LKey: keys[0].LKey, RKey: keys[0].RKey, SendCQ: d.scq, RecvCQ: d.rcq}
	if cfg.MRPerQP {
		res.QPKeys = keys
	}
	if d.ch != nil {
		res.Events = d.ch
	}
	access := mrAccess
	if cfg.Type == verbs.QPTypeUC {
		access = verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	}
	if cfg.SRQ {
		if d.srq, err = d.ctx.CreateSRQ(d.pd, verbs.SRQAttr{MaxWR: uint32(cfg.RecvWR)}); err != nil {
			return nil, fmt.Errorf("--use-srq: %w", err)
		}
	}
	for i := 0; i < cfg.NumQPs; i++ {
		qp, err := d.ctx.CreateQP(d.pd, verbs.QPAttr{Type: cfg.Type, SendCQ: d.scq, RecvCQ: d.rcq,
			MaxSendWR: uint32(cfg.SendWR), MaxRecvWR: uint32(cfg.RecvWR), MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: uint32(cfg.Inline), SRQ: d.srq})
		if err != nil {
			return nil, err
		}
		d.qps = append(d.qps, qp)
		// With -R the CM moves the QP from RESET (its access flags too).
		if !d.cm {
			if err := qp.ToInit(verbs.InitAttr{Port: d.port, Access: access, QKey: udQKey, PKeyIndex: cfg.PKeyIndex}); err != nil {
				return nil, err
			}
		}
		var rq verbs.RecvQueue = qp
		if d.srq != nil {
			rq = d.srq // a QP on an SRQ has no receive queue of its own
		}
		res.QPs = append(res.QPs, QP{SendQueue: qp, RecvQueue: rq, QPN: qp.QPN()})
	}
	return res, nil
}

// createCQs makes the send and receive CQs, on one completion channel
// with -e (as perftest 6.06's ctx->channel).
func (d *verbsDevice) createCQs(cfg SetupConfig) error {
	var err error
	if !cfg.Events {
		if d.scq, err = d.ctx.CreateCQ(cfg.CQE); err != nil {
			return err
		}
		d.rcq, err = d.ctx.CreateCQ(cfg.CQE)
		return err
	}
	if err := checkCompVector(cfg.CompVector, d.ctx.NumCompVectors(), d.ctx.Device().Name); err != nil {
		return err
	}
	if d.ch, err = d.ctx.CreateCompChannel(); err != nil {
		return err
	}
	v := uint32(cfg.CompVector)
	if d.scq, err = d.ctx.CreateCQOnVector(cfg.CQE, d.ch, v); err != nil {
		return err
	}
	d.rcq, err = d.ctx.CreateCQOnVector(cfg.CQE, d.ch, v)
	return err
}

// The on-demand paging capability bits of the kernel's include/rdma/
// ib_verbs.h (enum ib_odp_general_cap_bits, ib_odp_transport_cap_bits),
// as EX QUERY_DEVICE reports them in odp_caps.
const (
	odpSupport     = 1 << 0 // IB_ODP_SUPPORT
	odpSupportSend = 1 << 0 // IB_ODP_SUPPORT_SEND
	odpSupportRecv = 1 << 1 // IB_ODP_SUPPORT_RECV
)

// checkODP refuses --odp, before anything is allocated, on a device whose
// odp_caps lack RC send and receive, as perftest's check_odp_support
// (src/perftest_resources.c) does: exit 5. Without the probe a kernel
// whose rxe has no ODP fails REG_MR with EINVAL, which names nothing.
func (d *verbsDevice) checkODP() error {
	da, err := d.ctx.QueryDevice()
	if err != nil {
		return fmt.Errorf("--odp: querying %s's on-demand paging capabilities: %w", d.ctx.Device().Name, err)
	}
	return odpCapable(d.ctx.Device().Name, da.ODPGeneralCaps, da.ODPRCCaps)
}

// odpCapable says why a device with these odp_caps cannot run --odp.
func odpCapable(dev string, general uint64, rc uint32) error {
	switch {
	case general&odpSupport == 0:
		return fmt.Errorf("--odp: %s has no On-Demand Paging (its driver or this kernel lacks it; run without --odp): %w", dev, verbs.ErrUnsupported)
	case rc&odpSupportSend == 0:
		return fmt.Errorf("--odp: %s's On-Demand Paging has no RC sends (run without --odp): %w", dev, verbs.ErrUnsupported)
	case rc&odpSupportRecv == 0:
		return fmt.Errorf("--odp: %s's On-Demand Paging has no RC receives (run without --odp): %w", dev, verbs.ErrUnsupported)
	}
	return nil
}

// checkCompVector refuses a completion vector the device does not have
// (perftest's verify_params_with_device_context): exit 5.
func checkCompVector(v int, n uint32, dev string) error {
	if v < 0 || uint32(v) >= n {
		return fmt.Errorf("-X %d: %s has %d completion vectors (0..%d): %w", v, dev, n, int(n)-1, verbs.ErrUnsupported)
	}
	return nil
}

func (d *verbsDevice) av(cfg *ConnectConfig, remote *Dest) verbs.AHAttr {
	// As perftest's ctx_modify_qp_to_rtr: the SL always, the GRH's
	// traffic class and flow label only with a GRH (RoCE, or -x on IB);
	// the static rate of the HW rate limiter.
	a := verbs.AHAttr{Port: d.port, DLID: remote.LID, SL: cfg.SL, StaticRate: cfg.StaticRate}
	if cfg.GIDIndex >= 0 {
		a.IsGlobal, a.DGID, a.SGIDIndex = true, remote.GID, uint8(cfg.GIDIndex)
		a.HopLimit, a.TrafficClass, a.FlowLabel = 0xff, cfg.TrafficClass, cfg.FlowLabel
	}
	return a
}

// Connect applies perftest's ctx_modify_qp_to_rtr/rts attributes.
func (d *verbsDevice) Connect(i int, cfg ConnectConfig) error {
	if i < 0 || i >= len(d.qps) {
		return errors.New("perf: no such QP")
	}
	qp := d.qps[i]
	if d.typ == verbs.QPTypeUD {
		if err := qp.ToRTR(verbs.RTRAttr{}); err != nil {
			return err
		}
		return qp.ToRTS(verbs.RTSAttr{SQPSN: cfg.Local.PSN})
	}
	rd := uint8(max(1, min(int(cfg.Local.OutReads), 255)))
	remoteRd := uint8(max(1, min(int(cfg.Remote.OutReads), int(rd))))
	if err := qp.ToRTR(verbs.RTRAttr{Dest: d.av(&cfg, &cfg.Remote), PathMTU: pathMTU(cfg.MTU),
		DestQPN: cfg.Remote.QPN, RQPSN: cfg.Remote.PSN, MaxDestRdAtomic: rd, MinRNRTimer: 12}); err != nil {
		return err
	}
	retry := uint8(defRetryCount)
	if cfg.RetrySet {
		retry = cfg.RetryCnt
	}
	return qp.ToRTS(verbs.RTSAttr{SQPSN: cfg.Local.PSN, Timeout: cfg.Timeout, RetryCnt: retry, RNRRetry: 7, MaxRdAtomic: remoteRd})
}

// pathMTU is the enum of an MTU in bytes (0, which the kernel refuses,
// for a size that is none; the session checked it already).
func pathMTU(bytes int) vocab.MTU {
	m, _ := vocab.MTUFromBytes(bytes)
	return m
}

func (d *verbsDevice) CreateAH(remote *Dest, cfg ConnectConfig) (*verbs.AH, error) {
	ah, err := d.ctx.CreateAH(d.pd, d.av(&cfg, remote))
	if err != nil {
		return nil, err
	}
	d.ahs = append(d.ahs, ah)
	return ah, nil
}

// Close destroys in reverse order of creation: AHs, QPs, CQs, MR, PD,
// then unmaps the buffer and closes the context.
func (d *verbsDevice) Close() error {
	var errs []error
	for _, ah := range d.ahs {
		errs = append(errs, ah.Close())
	}
	for _, qp := range d.qps {
		errs = append(errs, qp.Close())
	}
	if d.srq != nil {
		errs = append(errs, d.srq.Close())
	}
	if d.scq != nil {
		errs = append(errs, d.scq.Close())
	}
	if d.rcq != nil {
		errs = append(errs, d.rcq.Close())
	}
	if d.ch != nil {
		errs = append(errs, d.ch.Close())
	}
	for _, mr := range d.qmrs {
		errs = append(errs, mr.Close())
	}
	if d.mr != nil {
		errs = append(errs, d.mr.Close())
	}
	if d.pd != nil {
		errs = append(errs, d.pd.Close())
	}
	if d.buf != nil {
		errs = append(errs, d.buf.Close())
	}
	if d.ctx != nil {
		errs = append(errs, d.ctx.Close())
	}
	d.ahs, d.qps, d.srq, d.scq, d.rcq, d.ch, d.qmrs, d.mr, d.pd, d.buf, d.ctx = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// AttachMcast attaches QP i to the multicast group gid (McastDevice);
// destroying the QP (Close) detaches it.
func (d *verbsDevice) AttachMcast(i int, gid [16]byte, mlid uint16) error {
	if i < 0 || i >= len(d.qps) {
		return errors.New("perf: no such QP")
	}
	return d.qps[i].AttachMcast(gid, mlid)
}

// QueryQP is QP i's attributes as the kernel reports them (QUERY_QP).
func (d *verbsDevice) QueryQP(i int) (QPReport, error) {
	if i < 0 || i >= len(d.qps) {
		return QPReport{}, errors.New("perf: no such QP")
	}
	q, err := d.qps[i].Query()
	if err != nil {
		return QPReport{}, err
	}
	return QPReport{QPN: d.qps[i].QPN(), State: q.State.String(), TrafficClass: q.Dest.TrafficClass, FlowLabel: q.Dest.FlowLabel,
		SL: q.Dest.SL, Timeout: q.Timeout, RetryCnt: q.RetryCnt, RNRRetry: q.RNRRetry, PKeyIndex: q.PKeyIndex}, nil
}

// regPerQP registers, for --mr_per_qp, one memory region a QP (perftest's
// create_single_mr for each QP, src/perftest_resources.c): QP i's covers
// its source block and its destination block (engine.go's srcOff and
// dstOff: blocks i and QPs+i of 2*QPs) and what lies between, so that
// the buffer's layout stays one and QP i's work requests and key records
// use its own keys; there is no region over the whole buffer then.
// (perftest gives each QP a buffer of its own; the keys a QP uses, and
// the number of regions, are the same.)
func (d *verbsDevice) regPerQP(cfg SetupConfig, access verbs.Access) ([]QPKeys, error) {
	blk := cfg.BufSize / (2 * cfg.NumQPs)
	keys := make([]QPKeys, cfg.NumQPs)
	for i := range keys {
		mr, err := d.pd.RegMRRange(d.buf, i*blk, (cfg.NumQPs+1)*blk, access)
		if err != nil {
			if access&verbs.AccessOnDemand != 0 {
				return nil, fmt.Errorf("--odp: registering memory with On-Demand Paging: %w", err)
			}
			return nil, fmt.Errorf("--mr_per_qp: registering QP %d's memory region: %w", i, err)
		}
		d.qmrs = append(d.qmrs, mr)
		keys[i] = QPKeys{LKey: mr.LKey, RKey: mr.RKey}
	}
	return keys, nil
}
