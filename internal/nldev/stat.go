package nldev

import "syscall"

// Counter modes, QP counters, optional counters and MR statistics: what
// "rdma statistic qp|mode|set|unset|mr" read and write (nldev.c's
// STAT_GET, STAT_SET, STAT_DEL, STAT_GET_STATUS).

// Counter modes (enum rdma_nl_counter_mode) and auto-mode criteria (enum
// rdma_nl_counter_mask).
const (
	CounterModeNone   = 0
	CounterModeAuto   = 1
	CounterModeManual = 2

	CounterMaskQPType = 1
	CounterMaskPID    = 2
)

// QPMode is a port's QP counter mode (STAT_GET with STAT_MODE and
// STAT_RES=RES_QP): none, auto (Mask says by what) or manual.
type QPMode struct {
	DevIndex    uint32
	DevName     string
	Port        uint32
	Mode        uint32
	Mask        *uint32 // auto mode only
	OptCounters *bool   // auto mode: optional counters per QP counter too (6.11+)
}

func decodeQPMode(b []byte) QPMode {
	a := parseAttrs(b)
	m := QPMode{DevName: a.str(attrDevName), Mask: a.u32(attrStatAutoModeMask), OptCounters: boolOf(a.u8(attrStatOpCounterOn))}
	if v := a.u32(attrDevIndex); v != nil {
		m.DevIndex = *v
	}
	if v := a.u32(attrPortIndex); v != nil {
		m.Port = *v
	}
	if v := a.u32(attrStatMode); v != nil {
		m.Mode = *v
	}
	return m
}

// QPCounterMode reads port's QP counter mode. The request is rdma's: a
// STAT_MODE attribute (MANUAL) makes the kernel answer with the mode
// instead of the counters.
func (c *Client) QPCounterMode(dev, port uint32) (*QPMode, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	e.u32(attrStatMode, CounterModeManual)
	e.u32(attrStatRes, attrResQP)
	msgs, err := c.doAck(cmdStatGet, e.b)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, &KernelError{Op: "STAT_GET", Errno: syscall.ENODATA}
	}
	m := decodeQPMode(msgs[0])
	return &m, nil
}

// SetQPAutoMode sets port's QP counters to auto mode by the criteria of
// mask (CounterMask*), or off with mask 0. opt, when not nil, also turns
// optional counters per QP counter on or off (rdma's "optional-counters
// on|off" after "auto type on").
func (c *Client) SetQPAutoMode(dev, port, mask uint32, opt *bool) error {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	e.u32(attrStatRes, attrResQP)
	e.u32(attrStatMode, CounterModeAuto)
	e.u32(attrStatAutoModeMask, mask)
	if opt != nil {
		e.u8(attrStatOpCounterOn, b2u8(*opt))
	}
	_, err := c.doAck(cmdStatSet, e.b)
	return err
}

// BindQP binds QP lqpn of port to counter cntn, or to a new counter when
// cntn is nil, and returns the counter's id.
func (c *Client) BindQP(dev, port, lqpn uint32, cntn *uint32) (uint32, error) {
	var e encoder
	e.u32(attrStatMode, CounterModeManual)
	e.u32(attrStatRes, attrResQP)
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	e.u32(attrResLQPN, lqpn)
	if cntn != nil {
		e.u32(attrStatCounterID, *cntn)
	}
	msgs, err := c.doAck(cmdStatSet, e.b)
	if err != nil {
		return 0, err
	}
	if cntn != nil {
		return *cntn, nil
	}
	for _, m := range msgs {
		if v := parseAttrs(m).u32(attrStatCounterID); v != nil {
			return *v, nil
		}
	}
	return 0, nil
}

// UnbindQP unbinds QP lqpn of port from counter cntn.
func (c *Client) UnbindQP(dev, port, cntn, lqpn uint32) error {
	var e encoder
	e.u32(attrStatMode, CounterModeManual)
	e.u32(attrStatRes, attrResQP)
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	e.u32(attrStatCounterID, cntn)
	e.u32(attrResLQPN, lqpn)
	_, err := c.doAck(cmdStatDel, e.b)
	return err
}

// QPCounter is one QP counter ("rdma statistic qp show"): the QPs bound
// to it and its hardware counters.
type QPCounter struct {
	DevIndex uint32
	DevName  string
	Port     *uint32
	ID       *uint32 // cntn
	Mode     *uint32
	QPType   *uint8 // auto mode by type: the type it counts
	Owner           // auto mode by PID: the process
	LQPNs    []uint32
	Counters []Counter
}

func decodeQPCounterEntry(devIndex uint32, devName string, e attrs) QPCounter {
	q := QPCounter{DevIndex: devIndex, DevName: devName, Port: e.u32(attrPortIndex), ID: e.u32(attrStatCounterID),
		Mode: e.u32(attrStatMode), QPType: e.u8(attrResType), Owner: decodeOwner(e)}
	for _, qp := range e.entries(attrResQP, attrResQPEntry) {
		if v := qp.u32(attrResLQPN); v != nil {
			q.LQPNs = append(q.LQPNs, *v)
		}
	}
	q.Counters = decodeStatsOf(e)
	return q
}

// decodeStatsOf is the HWCOUNTERS table of a, entries with name and value.
func decodeStatsOf(a attrs) []Counter {
	var out []Counter
	for _, e := range a.entries(attrStatHWCounters, attrStatHWCounterEntry) {
		name := e.str(attrStatHWCounterName)
		v := e.u64(attrStatHWCounterValue)
		if name == "" || v == nil {
			continue
		}
		out = append(out, Counter{Name: name, Value: *v})
	}
	return out
}

// decodeQPCounters decodes one message of the STAT_GET dump with
// STAT_RES=RES_QP: the device handle, then a STAT_COUNTER table.
func decodeQPCounters(b []byte) []QPCounter {
	a := parseAttrs(b)
	idx := a.u32(attrDevIndex)
	name := a.str(attrDevName)
	if idx == nil || name == "" {
		return nil
	}
	var out []QPCounter
	for _, e := range a.entries(attrStatCounter, attrStatCounterEntry) {
		q := decodeQPCounterEntry(*idx, name, e)
		if q.ID == nil {
			continue // no id: nothing to name it by
		}
		out = append(out, q)
	}
	return out
}

// QPCounters lists the QP counters of port (0: every port) of device dev:
// one STAT_GET dump, as "rdma statistic qp show link DEV/PORT".
func (c *Client) QPCounters(dev, port uint32) ([]QPCounter, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	if port != 0 {
		e.u32(attrPortIndex, port)
	}
	e.u32(attrStatRes, attrResQP)
	msgs, err := c.do(cmdStatGet, true, e.b)
	if err != nil {
		return nil, err
	}
	var out []QPCounter
	for _, m := range msgs {
		out = append(out, decodeQPCounters(m)...)
	}
	return out, nil
}

// QPCounterByID reads one counter (STAT_GET with its id), as rdma does
// before unbinding every QP of a counter.
func (c *Client) QPCounterByID(dev, port, cntn uint32) (*QPCounter, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	e.u32(attrStatRes, attrResQP)
	e.u32(attrStatCounterID, cntn)
	msgs, err := c.doAck(cmdStatGet, e.b)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, &KernelError{Op: "STAT_GET", Errno: syscall.ENOENT}
	}
	a := parseAttrs(msgs[0])
	idx := a.u32(attrDevIndex)
	var di uint32
	if idx != nil {
		di = *idx
	}
	q := decodeQPCounterEntry(di, a.str(attrDevName), a)
	return &q, nil
}

// CounterStatus is one hardware counter of a port as STAT_GET_STATUS
// lists it: its index (what STAT_SET names optional counters by) and, for
// optional counters, whether it is on.
type CounterStatus struct {
	Name     string
	Index    uint32
	Optional bool
	Enabled  bool // optional counters: on; others are always on
}

func decodeCounterStatus(b []byte) []CounterStatus {
	a := parseAttrs(b)
	var out []CounterStatus
	for _, e := range a.entries(attrStatHWCounters, attrStatHWCounterEntry) {
		name := e.str(attrStatHWCounterName)
		idx := e.u32(attrStatHWCounterIndex)
		if name == "" || idx == nil {
			continue
		}
		cs := CounterStatus{Name: name, Index: *idx, Enabled: true}
		if d := e.u8(attrStatHWCounterDyn); d != nil {
			cs.Optional, cs.Enabled = true, *d != 0
		}
		out = append(out, cs)
	}
	return out
}

// CounterStatus lists port's counters with their indexes and which are
// optional ("rdma statistic mode supported"). Kernels before 5.18 have no
// STAT_GET_STATUS (EINVAL or EOPNOTSUPP).
func (c *Client) CounterStatus(dev, port uint32) ([]CounterStatus, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	msgs, err := c.doAck(cmdStatGetStatus, e.b)
	if err != nil {
		return nil, err
	}
	var out []CounterStatus
	for _, m := range msgs {
		out = append(out, decodeCounterStatus(m)...)
	}
	return out, nil
}

// SetOptionalCounters turns on exactly the optional counters of port with
// these indexes (CounterStatus) and every other optional counter off; no
// indexes is "rdma statistic unset ... optional-counters".
func (c *Client) SetOptionalCounters(dev, port uint32, indexes []uint32) error {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrPortIndex, port)
	var n encoder
	for _, i := range indexes {
		n.u32(attrStatHWCounterIndex, i)
	}
	e.put(attrStatHWCounters|nlaFNested, n.b)
	_, err := c.doAck(cmdStatSet, e.b)
	return err
}

// MRStat is one MR with the driver's per-MR counters ("rdma statistic
// mr"); drivers without them (rxe) send the MR number alone.
type MRStat struct {
	DevIndex uint32
	DevName  string
	MRN      *uint32
	Counters []Counter
}

func decodeMRStats(b []byte) []MRStat {
	var out []MRStat
	decodeRes(b, attrResMR, attrResMREntry, func(h ResHead, e attrs) {
		out = append(out, MRStat{DevIndex: h.DevIndex, DevName: h.DevName, MRN: e.u32(attrResMRN), Counters: decodeStatsOf(e)})
	})
	return out
}

// MRStatistics lists the MRs of device dev with their counters (one
// STAT_GET dump with STAT_RES=RES_MR).
func (c *Client) MRStatistics(dev uint32) ([]MRStat, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.u32(attrStatRes, attrResMR)
	msgs, err := c.do(cmdStatGet, true, e.b)
	if err != nil {
		return nil, err
	}
	var out []MRStat
	for _, m := range msgs {
		out = append(out, decodeMRStats(m)...)
	}
	return out, nil
}
