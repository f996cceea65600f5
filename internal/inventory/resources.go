package inventory

import (
	"errors"
	"fmt"
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
// Enum values are named as rdma names them (the entries' *Name methods).

// ErrNeedsLive is the answer of a captured tree to a question only the
// running kernel can answer (resources, system settings).
var ErrNeedsLive = errors.New("needs the live kernel (RDMA netlink): a captured --sysfs-root tree does not have it")

// ResNL is the part of the NLDEV client resources need; *nldev.Client has
// it. It is asked of the Source's NL by type assertion, so that the
// smaller NL interface still describes what the other models need.
type ResNL = nldev.ResourceReader

// Owner is who holds a resource: a process (PID, and Comm from
// /proc/PID/comm, "" once the process is gone) or a kernel module (Kernel,
// Comm is the module's name, such as "ib_core").
type Owner struct {
	PID    *uint32
	Comm   string
	Kernel bool
}

// The resources are nldev's entries (internal/nldev/res.go) with their
// owner resolved: each embeds its entry and an Owner, which stands over
// the entry's nldev.Owner (the same PID or module, and the process's
// comm). The device is the entry's DevIndex and DevName, the driver's
// details (rdma -dd; none on rxe and siw) its Driver; enums are named by
// the entry's *Name methods, as rdma names them.

// QP is one queue pair. Pointers are nil when the kernel did not report
// the field (rqpn of an unconnected QP, pdn of a kernel QP).
type QP struct {
	nldev.QP
	Owner
}

// CQ is one completion queue.
type CQ struct {
	nldev.CQ
	Owner
}

// MR is one memory region. RKey, LKey and IOVA are reported only to
// CAP_NET_ADMIN callers.
type MR struct {
	nldev.MR
	Owner
}

// PD is one protection domain.
type PD struct {
	nldev.PD
	Owner
}

// CMID is one RDMA CM ID.
type CMID struct {
	nldev.CMID
	Owner
}

// Ctx is one uverbs context (an open device).
type Ctx struct {
	nldev.Ctx
	Owner
}

// SRQ is one shared receive queue; QPs are its attached QPs (a single QP
// is Min == Max).
type SRQ struct {
	nldev.SRQ
	Owner
}

// ResFilter selects resources. Zero values select everything.
type ResFilter struct {
	Dev  string  // one device; unknown -> *NotFoundError
	PID  *uint32 // objects of one process
	LQPN *uint32 // QPs and CM IDs with this local QP number
}

func (f ResFilter) keep(o Owner) bool {
	return f.PID == nil || (o.PID != nil && *o.PID == *f.PID)
}

func (f ResFilter) keepQPN(n *uint32) bool { return f.LQPN == nil || (n != nil && *n == *f.LQPN) }

func (s *Source) resNL() (*live, ResNL, error) {
	l, err := s.b.running("resources")
	if err != nil {
		return nil, nil, err
	}
	r, ok := l.nl.(ResNL)
	if !ok {
		return nil, nil, fmt.Errorf("this netlink client cannot list resources")
	}
	return l, r, nil
}

// resDevs is the devices f selects, from the source's one device dump.
func (s *Source) resDevs(f ResFilter) (*live, ResNL, []nldev.Device, error) {
	l, r, err := s.resNL()
	if err != nil {
		return nil, nil, nil, err
	}
	devs, err := l.nlDevicesNamed(f.Dev)
	if err != nil {
		return nil, nil, nil, err
	}
	return l, r, devs, nil
}

// eachDev runs dump for each device. A device removed since the device
// dump (the kernel answers EINVAL for an index it no longer has, ENODEV in
// some paths) is left out of an all-devices listing, and is a
// *NotFoundError when it was named.
func (l *live) eachDev(devs []nldev.Device, named bool, dump func(d nldev.Device) error) error {
	for _, d := range devs {
		err := dump(d)
		if err == nil {
			continue
		}
		if l.gone(d, err) {
			if named {
				return &NotFoundError{Kind: "device", Name: d.Name, Exists: l.stillThere()}
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
func (l *live) gone(d nldev.Device, err error) bool {
	if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENODEV) {
		return false
	}
	now, derr := l.nl.Devices()
	if derr != nil {
		return false
	}
	l.recheck = now
	for _, n := range now {
		if n.Index == d.Index && n.Name == d.Name {
			return false
		}
	}
	return true
}

// stillThere names the devices of the last re-check (gone).
func (l *live) stillThere() []string {
	var names []string
	for _, d := range l.recheck {
		names = append(names, d.Name)
	}
	return names
}

// resState is what resource listing keeps between requests.
type resState struct {
	comms map[uint32]string // /proc/PID/comm by PID
	proc  string            // /proc (tests: a fake tree)
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

// ResSummaries counts the resources of every device, or of f.Dev (one
// RES_GET dump; with a device, the device dump checks the name).
func (s *Source) ResSummaries(dev string) ([]nldev.Summary, error) {
	l, r, err := s.resNL()
	if err != nil {
		return nil, err
	}
	if dev != "" {
		all, err := l.nlDevices()
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
	var out []nldev.Summary
	for _, x := range sums {
		if dev == "" || x.DevName == dev {
			out = append(out, x)
		}
	}
	return out, nil
}

// listRes lists one kind of resource on the devices f selects, one dump
// per device (dump is the kind's ResNL method), as mk makes each entry
// with its owner; qpn is the entry's local QP number where f.LQPN applies
// (QPs and CM IDs), else nil.
func listRes[T any, R interface{ holder() Owner }](s *Source, f ResFilter, dump func(ResNL, []nldev.Device) ([]T, error),
	mk func(T) R, qpn func(T) *uint32) ([]R, error) {
	l, r, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	var out []R
	err = l.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		xs, err := dump(r, []nldev.Device{d})
		for _, x := range xs {
			o := mk(x)
			if f.keep(o.holder()) && (qpn == nil || f.keepQPN(qpn(x))) {
				out = append(out, o)
			}
		}
		return err
	})
	return out, err
}

// holder is the Owner of each resource type, for listRes.
func (o Owner) holder() Owner { return o }

// QPs lists the QPs f selects.
func (s *Source) QPs(f ResFilter) ([]QP, error) {
	return listRes(s, f, ResNL.QPsOf, func(q nldev.QP) QP { return QP{q, s.owner(q.Owner)} }, func(q nldev.QP) *uint32 { return q.LQPN })
}

// CQs lists the CQs f selects (f.LQPN does not apply).
func (s *Source) CQs(f ResFilter) ([]CQ, error) {
	return listRes(s, f, ResNL.CQsOf, func(c nldev.CQ) CQ { return CQ{c, s.owner(c.Owner)} }, nil)
}

// MRs lists the MRs f selects.
func (s *Source) MRs(f ResFilter) ([]MR, error) {
	return listRes(s, f, ResNL.MRsOf, func(m nldev.MR) MR { return MR{m, s.owner(m.Owner)} }, nil)
}

// PDs lists the PDs f selects.
func (s *Source) PDs(f ResFilter) ([]PD, error) {
	return listRes(s, f, ResNL.PDsOf, func(p nldev.PD) PD { return PD{p, s.owner(p.Owner)} }, nil)
}

// CMIDs lists the RDMA CM IDs f selects.
func (s *Source) CMIDs(f ResFilter) ([]CMID, error) {
	return listRes(s, f, ResNL.CMIDsOf, func(m nldev.CMID) CMID { return CMID{m, s.owner(m.Owner)} }, func(m nldev.CMID) *uint32 { return m.LQPN })
}

// Contexts lists the uverbs contexts f selects.
func (s *Source) Contexts(f ResFilter) ([]Ctx, error) {
	return listRes(s, f, ResNL.ContextsOf, func(x nldev.Ctx) Ctx { return Ctx{x, s.owner(x.Owner)} }, nil)
}

// SRQs lists the SRQs f selects.
func (s *Source) SRQs(f ResFilter) ([]SRQ, error) {
	return listRes(s, f, ResNL.SRQsOf, func(x nldev.SRQ) SRQ { return SRQ{x, s.owner(x.Owner)} }, nil)
}
