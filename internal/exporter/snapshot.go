package exporter

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/promtext"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Snapshot is one scrape's worth of RDMA metrics, built once when the
// inventory is read so that a stale snapshot is served without work.
type Snapshot struct {
	at         time.Time
	took       time.Duration
	readErrors int
	metrics    []promtext.Metric
}

// Metrics are the snapshot's RDMA series.
func (s *Snapshot) Metrics() []promtext.Metric { return s.metrics }

// ReadErrors counts the reads that failed (their series are missing).
func (s *Snapshot) ReadErrors() int { return s.readErrors }

var (
	labelsDevInfo = []string{"device", "node_guid", "sys_image_guid", "fw_version", "driver", "pci_address",
		"node_type", "protocol", "board_id", "hca_type", "hw_rev", "netns_mode"}
	labelsPort     = []string{"device", "port"}
	labelsCounter  = []string{"device", "port", "category"}
	labelsDevCount = []string{"device", "category"}

	descDevInfo = promtext.MustDesc("rdma_device_info",
		"RDMA device facts (labels), value 1; netns_mode is the RDMA subsystem's (shared/exclusive, empty offline).", promtext.Gauge, labelsDevInfo...)
	descPortInfo = promtext.MustDesc("rdma_port_info",
		"RDMA port facts (labels), value 1: link layer, the netdev of a RoCE port, link width and speed.", promtext.Gauge,
		[]string{"device", "port", "link_layer", "netdev", "width", "speed"}...)
	descState = promtext.MustDesc("rdma_port_state_id",
		"Port logical state (enum ib_port_state): 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.", promtext.Gauge, labelsPort...)
	descPhys = promtext.MustDesc("rdma_port_physical_state_id",
		"Port physical state (enum ib_port_phys_state): 1 SLEEP, 2 POLLING, 3 DISABLED, 4 CONFIG_TRAINING, 5 LINK_UP, 6 LINK_ERROR_RECOVERY, 7 PHY_TEST.", promtext.Gauge, labelsPort...)
	descRate = promtext.MustDesc("rdma_port_rate_bytes_per_second",
		"Port link rate (sysfs rate) in bytes per second.", promtext.Gauge, labelsPort...)
	descMTU = promtext.MustDesc("rdma_port_active_mtu_bytes",
		"Active RDMA MTU of the port in bytes (RoCE: the largest the netdev's MTU allows).", promtext.Gauge, labelsPort...)
	descLID = promtext.MustDesc("rdma_port_lid",
		"InfiniBand LID of the port.", promtext.Gauge, labelsPort...)
	descSMLID = promtext.MustDesc("rdma_port_sm_lid",
		"InfiniBand LID of the port's subnet manager (0: none).", promtext.Gauge, labelsPort...)
	descGIDs = promtext.MustDesc("rdma_port_gid_entries",
		"Populated entries of the port's GID table.", promtext.Gauge, labelsPort...)
	descGIDSize = promtext.MustDesc("rdma_port_gid_table_size",
		"Slots of the port's GID table, populated or not.", promtext.Gauge, labelsPort...)
	descQP = promtext.MustDesc("rdma_qp_info",
		"One queue pair (only with --collector.qp, at most --collector.qp.limit series), value 1.", promtext.Gauge,
		[]string{"device", "port", "lqpn", "type", "state", "pid", "comm"}...)
	descQPs = promtext.MustDesc("rdma_qps",
		"Queue pairs of the device (only with --collector.qp), whether or not their series fit under the limit.", promtext.Gauge,
		[]string{"device"}...)
	descQPDropped = promtext.MustDesc("rdma_exporter_qp_series_dropped",
		"Queue pairs left out of rdma_qp_info by --collector.qp.limit.", promtext.Gauge)
)

// Take reads one snapshot from src. Only a failed device list fails it;
// a device or port that vanishes halfway, or a counter set that cannot be
// read, loses its series and counts as a read error.
func Take(src *inventory.Source, o Options) (*Snapshot, error) { return take(src, o, nil, nil, nil) }

// devCache keeps each live device's sysfs facts (driver, PCI address,
// board id, HCA type, hardware revision) between snapshots: they change
// only when the device registers anew, which gives it a new NLDEV index.
// Reading them was 5 sysfs calls per device and scrape (at 64 rxe devices
// 7% of a scrape's CPU profile).
type devCache map[devKey]inventory.Device

type devKey struct {
	index uint32
	name  string
}

// devices lists src's devices with their sysfs facts: from dc where the
// device (index and name) was seen before, else read and remembered. dc
// nil, or offline (no index): every device is read.
func devices(src *inventory.Source, dc *devCache) ([]inventory.Device, error) {
	if dc == nil || src.Offline() {
		return src.Devices("", inventory.DeviceOptions{Sysfs: true, Board: true})
	}
	devs, err := src.Devices("", inventory.DeviceOptions{})
	if err != nil {
		return nil, err
	}
	next := make(devCache, len(devs))
	for i, d := range devs {
		if d.Index == nil {
			continue
		}
		k := devKey{*d.Index, d.Name}
		c, ok := (*dc)[k]
		if !ok {
			full, err := src.Devices(d.Name, inventory.DeviceOptions{Sysfs: true, Board: true})
			if err != nil || len(full) != 1 {
				continue // gone or renamed meanwhile: netlink's facts only, read again next time
			}
			c = full[0]
		}
		next[k] = c
		devs[i].Driver, devs[i].PCIAddr, devs[i].BoardID, devs[i].HCAType, devs[i].HWRev =
			c.Driver, c.PCIAddr, c.BoardID, c.HCAType, c.HWRev
	}
	*dc = next // devices that left are forgotten
	return devs, nil
}

// gidCache keeps the GID table figures between snapshots: reading them is
// the dearest part of a snapshot (a uverbs context per device, or a sysfs
// read per slot), and they change only when addresses do.
type gidCache struct {
	at time.Time
	n  map[string][2]int // "dev/port" -> populated entries, slots
}

// take is Take with what a Collector keeps between snapshots (each may
// be nil): GID figures, device facts, and the counter directories known
// missing (ad needs dc, whose devices it follows).
func take(src *inventory.Source, o Options, gc *gidCache, dc *devCache, ad inventory.AbsentDirs) (*Snapshot, error) {
	start := time.Now()
	s := &Snapshot{at: start}
	devs, err := devices(src, dc)
	if err != nil {
		return nil, err
	}
	if ad != nil && dc != nil && !src.Offline() {
		ad.Keep(func(index uint32, dev string) bool {
			_, ok := (*dc)[devKey{index, dev}]
			return ok
		})
		src.UseAbsentDirs(ad)
	}
	netns := src.NetnsMode()
	for _, d := range devs {
		s.add(descDevInfo, 1, d.Name, d.NodeGUID, d.SysImageGUID, d.FW, d.Driver, d.PCIAddr,
			d.NodeType, d.Protocol, d.BoardID, d.HCAType, d.HWRev, netns)
	}

	ports, err := src.Ports("", 0, inventory.PortOptions{})
	if err != nil {
		s.readErrors++
	}
	var refs []inventory.PortRef
	for _, p := range ports {
		port := strconv.FormatUint(uint64(p.Port), 10)
		s.add(descPortInfo, 1, p.Dev, port, p.LinkLayer, p.Netdev, p.Width, p.Speed)
		if v, ok := portStates[p.State]; ok {
			s.add(descState, float64(v), p.Dev, port)
		}
		if v, ok := physStates[p.PhysState]; ok {
			s.add(descPhys, float64(v), p.Dev, port)
		}
		if p.RateGbps != nil {
			s.add(descRate, *p.RateGbps*1e9/8, p.Dev, port)
		}
		if p.ActiveMTU != nil {
			s.add(descMTU, float64(*p.ActiveMTU), p.Dev, port)
		}
		if p.LinkLayer == "InfiniBand" {
			if p.LID != nil {
				s.add(descLID, float64(*p.LID), p.Dev, port)
			}
			if p.SMLID != nil {
				s.add(descSMLID, float64(*p.SMLID), p.Dev, port)
			}
		}
		refs = append(refs, inventory.PortRef{Dev: p.Dev, Port: p.Port, Index: p.DevIndex})
	}

	s.addGIDs(src, refs, o.GIDInterval, gc)

	// Counters, one device at a time so that one that vanishes loses only
	// its own series.
	seen := map[string]bool{}
	for i := 0; i < len(refs); {
		j := i
		for j < len(refs) && refs[j].Dev == refs[i].Dev {
			j++
		}
		sets, err := src.Counters(refs[i:j], nil)
		i = j
		if err != nil {
			s.readErrors++
			continue
		}
		for _, set := range sets {
			if set.Err != nil {
				s.readErrors++ // netlink refused; sysfs hw_counters were read instead
			}
			s.addCounters(set, seen)
		}
	}

	if o.QP {
		s.addQPs(src, o.QPLimit)
	}
	s.took = time.Since(start)
	return s, nil
}

// addGIDs adds each port's populated GID entries and table slots: read
// afresh (one QUERY_GID_TABLE per device live, sysfs offline) when gc is
// nil, older than interval, or lacks a port; else from gc.
func (s *Snapshot) addGIDs(src *inventory.Source, refs []inventory.PortRef, interval time.Duration, gc *gidCache) {
	key := func(r inventory.PortRef) string { return r.Dev + "/" + strconv.FormatUint(uint64(r.Port), 10) }
	fresh := gc != nil && gc.n != nil && time.Since(gc.at) < interval
	for _, r := range refs {
		if fresh {
			if _, ok := gc.n[key(r)]; !ok {
				fresh = false
			}
		}
	}
	if !fresh && len(refs) > 0 {
		n := map[string][2]int{}
		tables, err := src.GIDs(refs, false)
		if err != nil {
			s.readErrors++
			return
		}
		for i, t := range tables {
			used := 0
			for _, g := range t {
				if !g.Empty() {
					used++
				}
			}
			size, err := src.Sysfs().GIDTableLen(refs[i].Dev, refs[i].Port)
			if err != nil {
				size = -1
			}
			n[key(refs[i])] = [2]int{used, size}
		}
		if gc == nil {
			gc = &gidCache{}
		}
		gc.at, gc.n = time.Now(), n
	}
	for _, r := range refs {
		v := gc.n[key(r)]
		port := strconv.FormatUint(uint64(r.Port), 10)
		s.add(descGIDs, float64(v[0]), r.Dev, port)
		if v[1] >= 0 {
			s.add(descGIDSize, float64(v[1]), r.Dev, port)
		}
	}
}

// addCounters adds one counter set. seen holds the series already added:
// two kernel names that sanitize alike keep the first, since a duplicate
// series fails the whole scrape.
func (s *Snapshot) addCounters(set inventory.CounterSet, seen map[string]bool) {
	port := strconv.FormatUint(uint64(set.Port), 10)
	for _, c := range set.Counters {
		name, mult := CounterMetric(set.Source, c.Name, set.Port)
		if name == "" {
			continue
		}
		key := name + "\x00" + set.Dev + "\x00" + port
		if seen[key] {
			continue
		}
		seen[key] = true
		cat := vocab.Counter(c.Name).Category.String()
		v := float64(c.Value) * float64(mult)
		if set.Port == 0 {
			s.add(counterDesc(name, set.Source, true), v, set.Dev, cat)
		} else {
			s.add(counterDesc(name, set.Source, false), v, set.Dev, port, cat)
		}
	}
}

// descCache keeps one Desc per counter metric name: building a Desc
// validates and hashes, and names repeat every scrape.
var descCache sync.Map

func counterDesc(name, source string, device bool) *promtext.Desc {
	if d, ok := descCache.Load(name); ok {
		return d.(*promtext.Desc)
	}
	var d *promtext.Desc
	var err error
	switch {
	case source == inventory.SrcCounters:
		d, err = promtext.NewDesc(name, "RDMA port counter from sysfs counters/ (PMA PortCounters), in base units.", promtext.Counter, labelsCounter...)
	case device:
		d, err = promtext.NewDesc(name, "RDMA device-level hw counter (sysfs hw_counters/ of the device).", promtext.Counter, labelsDevCount...)
	default:
		d, err = promtext.NewDesc(name, "RDMA port hw counter (NLDEV statistics, as rdma statistic show; sysfs hw_counters/ where netlink has none).", promtext.Counter, labelsCounter...)
	}
	if err != nil {
		return nil // CounterMetric's names are valid (FuzzCounterMetric); never cached
	}
	v, _ := descCache.LoadOrStore(name, d)
	return v.(*promtext.Desc)
}

func (s *Snapshot) addQPs(src *inventory.Source, limit int) {
	qps, err := src.QPs(inventory.ResFilter{})
	if err != nil {
		if !errors.Is(err, inventory.ErrNeedsLive) {
			s.readErrors++
		}
		return
	}
	perDev := map[string]int{}
	var devOrder []string
	dropped := 0
	for _, q := range qps {
		if perDev[q.DevName] == 0 {
			devOrder = append(devOrder, q.DevName)
		}
		perDev[q.DevName]++
		if limit <= 0 {
			dropped++
			continue
		}
		limit--
		s.add(descQP, 1, q.DevName, optU32(q.Port), optU32(q.LQPN), q.TypeName(), q.StateName(), optU32(q.PID), q.Comm)
	}
	slices.Sort(devOrder)
	for _, d := range devOrder {
		s.add(descQPs, float64(perDev[d]), d)
	}
	s.add(descQPDropped, float64(dropped))
}

func optU32(v *uint32) string {
	if v == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*v), 10)
}

// add appends one const metric; label values from the kernel are valid
// UTF-8 or replaced, so that one odd string cannot fail the scrape.
func (s *Snapshot) add(d *promtext.Desc, v float64, labels ...string) {
	for i, l := range labels {
		labels[i] = strings.ToValidUTF8(l, "\uFFFD")
	}
	if d == nil {
		s.readErrors++
		return
	}
	m, err := promtext.NewMetric(d, v, labels...)
	if err != nil {
		s.readErrors++
		return
	}
	s.metrics = append(s.metrics, m)
}

// portStates and physStates map vocab's names back to the enum values.
var portStates, physStates = func() (map[string]uint8, map[string]uint8) {
	ps, ph := map[string]uint8{}, map[string]uint8{}
	for i := 0; i < 16; i++ {
		if n := vocab.PortState(i).String(); n != "UNKNOWN" {
			if _, dup := ps[n]; !dup {
				ps[n] = uint8(i)
			}
		}
		if n := vocab.PhysState(i).String(); n != "UNKNOWN" {
			if _, dup := ph[n]; !dup {
				ph[n] = uint8(i)
			}
		}
	}
	return ps, ph
}()
