package inventory

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Resources (QPs, CQs, MRs, PDs, CM IDs, uverbs contexts, SRQs and the
// per-device counts) exist only in the running kernel: they come from the
// NLDEV RES_* requests over the source's one socket, after its one device
// dump (one RES_*_GET dump per device: the kernel needs the device index).
// Enum values are named as rdma names them (nldev's *Name functions).

// ErrNeedsLive is the answer of a captured tree to a question only the
// running kernel can answer (resources, system settings).
var ErrNeedsLive = errors.New("needs the live kernel (RDMA netlink): a captured --sysfs-root tree does not have it")

// ResNL is the part of the NLDEV client resources need; *nldev.Client has
// it. It is asked of the Source's NL by type assertion, so that the
// smaller NL interface still describes what the other models need.
type ResNL interface {
	ResourceSummary() ([]nldev.Summary, error)
	QPsOf(devs []nldev.Device) ([]nldev.QP, error)
	CQsOf(devs []nldev.Device) ([]nldev.CQ, error)
	MRsOf(devs []nldev.Device) ([]nldev.MR, error)
	PDsOf(devs []nldev.Device) ([]nldev.PD, error)
	CMIDsOf(devs []nldev.Device) ([]nldev.CMID, error)
	ContextsOf(devs []nldev.Device) ([]nldev.Ctx, error)
	SRQsOf(devs []nldev.Device) ([]nldev.SRQ, error)
}

// Owner is who holds a resource: a process (PID, and Comm from
// /proc/PID/comm, "" once the process is gone) or a kernel module (Kernel,
// Comm is the module's name, such as "ib_core").
type Owner struct {
	PID    *uint32
	Comm   string
	Kernel bool
}

// ResHead is what every resource carries: its device and owner, and the
// driver's own details (rdma -dd; none on rxe and siw).
type ResHead struct {
	DevIndex uint32
	Dev      string
	Owner
	Driver []nldev.DriverAttr
}

// QP is one queue pair. Pointers are nil and strings "" when the kernel
// did not report the field (rqpn of an unconnected QP, pdn of a kernel QP).
type QP struct {
	ResHead
	Port         *uint32
	LQPN         *uint32
	RQPN         *uint32
	Type         string // "RC", "UD", "GSI"...
	State        string // "RESET", "INIT", "RTR", "RTS"...
	RQPSN        *uint32
	SQPSN        *uint32
	PathMigState string // "MIGRATED", "REARM", "ARMED"
	PDN          *uint32
	Subtype      string // a driver QP's kind (Type "DRIVER")
}

// CQ is one completion queue.
type CQ struct {
	ResHead
	CQN     *uint32
	CQE     *uint32
	Users   *uint64
	PollCtx string // kernel CQs: "DIRECT", "SOFTIRQ", "WORKQUEUE"...
	DIM     *bool  // adaptive moderation
	CtxN    *uint32
}

// MR is one memory region. RKey, LKey and IOVA are reported only to
// CAP_NET_ADMIN callers.
type MR struct {
	ResHead
	MRN  *uint32
	RKey *uint32
	LKey *uint32
	IOVA *uint64
	Len  *uint64
	PDN  *uint32
	CtxN *uint32
}

// PD is one protection domain.
type PD struct {
	ResHead
	PDN              *uint32
	LocalDMALKey     *uint32
	UnsafeGlobalRKey *uint32
	Users            *uint64
	CtxN             *uint32
}

// CMID is one RDMA CM ID.
type CMID struct {
	ResHead
	Port    *uint32
	CMIDN   *uint32
	LQPN    *uint32
	QPType  string
	State   string // "LISTEN", "CONNECT"...
	PS      string // port space: "TCP", "UDP", "IB", "IPOIB"
	SrcAddr netip.AddrPort
	DstAddr netip.AddrPort
}

// Ctx is one uverbs context (an open device).
type Ctx struct {
	ResHead
	CtxN *uint32
}

// SRQ is one shared receive queue.
type SRQ struct {
	ResHead
	SRQN *uint32
	Type string // "BASIC", "XRC", "TM"
	PDN  *uint32
	CQN  *uint32
	QPs  []nldev.QPRange // attached QPs; a single QP is Min == Max
}

// ResSummary is one device's resource counts, by the kernel's names ("pd",
// "cq", "qp", "cm_id", "mr", "ctx", "srq"; Names keeps its order).
type ResSummary struct {
	DevIndex uint32
	Dev      string
	Counts   map[string]uint64
	Names    []string
}

// ResFilter selects resources. Zero values select everything.
type ResFilter struct {
	Dev  string  // one device; unknown -> *NotFoundError
	PID  *uint32 // objects of one process
	LQPN *uint32 // QPs and CM IDs with this local QP number
}

func (f ResFilter) keep(h ResHead) bool {
	return f.PID == nil || (h.PID != nil && *h.PID == *f.PID)
}

func (f ResFilter) keepQPN(n *uint32) bool { return f.LQPN == nil || (n != nil && *n == *f.LQPN) }

func (s *Source) resNL() (ResNL, error) {
	if s.Offline() {
		return nil, fmt.Errorf("resources: %w", ErrNeedsLive)
	}
	r, ok := s.nl.(ResNL)
	if !ok {
		return nil, fmt.Errorf("this netlink client cannot list resources")
	}
	return r, nil
}

// resDevs is the devices f selects, from the source's one device dump.
func (s *Source) resDevs(f ResFilter) (ResNL, []nldev.Device, error) {
	r, err := s.resNL()
	if err != nil {
		return nil, nil, err
	}
	all, err := s.nlDevices()
	if err != nil {
		return nil, nil, err
	}
	devs, err := selectDevs(all, f.Dev)
	if err != nil {
		return nil, nil, err
	}
	return r, devs, nil
}

// eachDev runs dump for each device. A device removed since the device
// dump (the kernel answers EINVAL for an index it no longer has, ENODEV in
// some paths) is left out of an all-devices listing, and is a
// *NotFoundError when it was named.
func (s *Source) eachDev(devs []nldev.Device, named bool, dump func(d nldev.Device) error) error {
	for _, d := range devs {
		err := dump(d)
		if err == nil {
			continue
		}
		if s.gone(d, err) {
			if named {
				return &NotFoundError{Kind: "device", Name: d.Name, Exists: s.stillThere()}
			}
			continue
		}
		return err
	}
	return nil
}

// gone reports whether err (from a request about d) is d having gone
// away: the kernel's EINVAL or ENODEV, confirmed by a fresh device dump
// that no longer has d's index under d's name. EINVAL alone proves
// nothing (it is also the answer to a request the kernel does not know),
// so only the error path pays for the second dump.
func (s *Source) gone(d nldev.Device, err error) bool {
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENODEV) {
		return false
	}
	now, derr := s.nl.Devices()
	if derr != nil {
		return false
	}
	s.res.recheck = now
	for _, n := range now {
		if n.Index == d.Index && n.Name == d.Name {
			return false
		}
	}
	return true
}

// stillThere names the devices of the last re-check (gone).
func (s *Source) stillThere() []string {
	var names []string
	for _, d := range s.res.recheck {
		names = append(names, d.Name)
	}
	return names
}

// resState is what resource listing keeps between requests.
type resState struct {
	recheck []nldev.Device    // the device dump made by gone
	comms   map[uint32]string // /proc/PID/comm by PID
	proc    string            // /proc (tests: a fake tree)
}

// owner is who owns a resource: the kernel module, or the process's comm
// (read once per PID and run).
func (s *Source) owner(o nldev.Owner) Owner {
	r := Owner{PID: o.PID, Comm: o.KernName, Kernel: o.KernName != ""}
	if o.PID != nil && o.KernName == "" {
		if s.res.comms == nil {
			s.res.comms = map[uint32]string{}
		}
		c, ok := s.res.comms[*o.PID]
		if !ok {
			// Not os.ReadFile: see sysfs.ReadBounded.
			b, err := sysfs.ReadBounded(filepath.Join(s.procRoot(), strconv.FormatUint(uint64(*o.PID), 10), "comm"))
			if err == nil {
				c = strings.TrimSpace(string(b))
			}
			s.res.comms[*o.PID] = c
		}
		r.Comm = c
	}
	return r
}

func (s *Source) procRoot() string {
	if s.res.proc != "" {
		return s.res.proc
	}
	return "/proc"
}

func (s *Source) head(h nldev.ResHead) ResHead {
	return ResHead{DevIndex: h.DevIndex, Dev: h.DevName, Owner: s.owner(h.Owner), Driver: h.Driver}
}

func name8(v *uint8, f func(uint8) string) string {
	if v == nil {
		return ""
	}
	return f(*v)
}

// ResSummaries counts the resources of every device, or of f.Dev (one
// RES_GET dump; with a device, the device dump checks the name).
func (s *Source) ResSummaries(dev string) ([]ResSummary, error) {
	r, err := s.resNL()
	if err != nil {
		return nil, err
	}
	if dev != "" {
		all, err := s.nlDevices()
		if err != nil {
			return nil, err
		}
		if _, err := selectDevs(all, dev); err != nil {
			return nil, err
		}
	}
	sums, err := r.ResourceSummary()
	if err != nil {
		return nil, err
	}
	var out []ResSummary
	for _, x := range sums {
		if dev != "" && x.DevName != dev {
			continue
		}
		out = append(out, ResSummary{DevIndex: x.DevIndex, Dev: x.DevName, Counts: x.Counts, Names: x.Names})
	}
	return out, nil
}

// QPs lists the QPs f selects.
func (s *Source) QPs(f ResFilter) ([]QP, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []QP
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		qs, err := r.QPsOf([]nldev.Device{d})
		for _, q := range qs {
			h := s.head(q.ResHead)
			if !f.keep(h) || !f.keepQPN(q.LQPN) {
				continue
			}
			out = append(out, QP{ResHead: h, Port: q.Port, LQPN: q.LQPN, RQPN: q.RQPN,
				Type: name8(q.Type, nldev.QPTypeName), State: name8(q.State, nldev.QPStateName),
				RQPSN: q.RQPSN, SQPSN: q.SQPSN, PathMigState: name8(q.PathMigState, nldev.PathMigStateName), PDN: q.PDN,
				Subtype: q.Subtype})
		}
		return err
	})
	return out, err
}

// CQs lists the CQs f selects (f.LQPN does not apply).
func (s *Source) CQs(f ResFilter) ([]CQ, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []CQ
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		cs, err := r.CQsOf([]nldev.Device{d})
		for _, c := range cs {
			h := s.head(c.ResHead)
			if !f.keep(h) {
				continue
			}
			out = append(out, CQ{ResHead: h, CQN: c.CQN, CQE: c.CQE, Users: c.Users,
				PollCtx: name8(c.PollCtx, nldev.PollCtxName), DIM: c.DIM, CtxN: c.CtxN})
		}
		return err
	})
	return out, err
}

// MRs lists the MRs f selects.
func (s *Source) MRs(f ResFilter) ([]MR, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []MR
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		ms, err := r.MRsOf([]nldev.Device{d})
		for _, m := range ms {
			h := s.head(m.ResHead)
			if !f.keep(h) {
				continue
			}
			out = append(out, MR{ResHead: h, MRN: m.MRN, RKey: m.RKey, LKey: m.LKey, IOVA: m.IOVA, Len: m.Len, PDN: m.PDN, CtxN: m.CtxN})
		}
		return err
	})
	return out, err
}

// PDs lists the PDs f selects.
func (s *Source) PDs(f ResFilter) ([]PD, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []PD
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		ps, err := r.PDsOf([]nldev.Device{d})
		for _, p := range ps {
			h := s.head(p.ResHead)
			if !f.keep(h) {
				continue
			}
			out = append(out, PD{ResHead: h, PDN: p.PDN, LocalDMALKey: p.LocalDMALKey, UnsafeGlobalRKey: p.UnsafeGlobalRKey, Users: p.Users, CtxN: p.CtxN})
		}
		return err
	})
	return out, err
}

// CMIDs lists the RDMA CM IDs f selects.
func (s *Source) CMIDs(f ResFilter) ([]CMID, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []CMID
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		ids, err := r.CMIDsOf([]nldev.Device{d})
		for _, m := range ids {
			h := s.head(m.ResHead)
			if !f.keep(h) || !f.keepQPN(m.LQPN) {
				continue
			}
			c := CMID{ResHead: h, Port: m.Port, CMIDN: m.CMIDN, LQPN: m.LQPN,
				QPType: name8(m.QPType, nldev.QPTypeName), State: name8(m.State, nldev.CMStateName),
				SrcAddr: m.SrcAddr, DstAddr: m.DstAddr}
			if m.PS != nil {
				c.PS = nldev.PSName(*m.PS)
			}
			out = append(out, c)
		}
		return err
	})
	return out, err
}

// Contexts lists the uverbs contexts f selects.
func (s *Source) Contexts(f ResFilter) ([]Ctx, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []Ctx
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		xs, err := r.ContextsOf([]nldev.Device{d})
		for _, x := range xs {
			h := s.head(x.ResHead)
			if !f.keep(h) {
				continue
			}
			out = append(out, Ctx{ResHead: h, CtxN: x.CtxN})
		}
		return err
	})
	return out, err
}

// SRQs lists the SRQs f selects.
func (s *Source) SRQs(f ResFilter) ([]SRQ, error) {
	r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []SRQ
	err = s.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		ss, err := r.SRQsOf([]nldev.Device{d})
		for _, x := range ss {
			h := s.head(x.ResHead)
			if !f.keep(h) {
				continue
			}
			out = append(out, SRQ{ResHead: h, SRQN: x.SRQN, Type: name8(x.Type, nldev.SRQTypeName), PDN: x.PDN, CQN: x.CQN, QPs: x.QPs})
		}
		return err
	})
	return out, err
}
