package inventory

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"github.com/rdmactl/rdmactl/internal/kfeat"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/nldev/nldevtest"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// More NLDEV numbers (rdma_netlink.h) for the kernel below.
const (
	cmdResGet    = 9
	cmdResQPGet  = 10
	cmdResCMID   = 11
	cmdResCQGet  = 12
	cmdResMRGet  = 13
	cmdResPDGet  = 14
	cmdResCtxGet = 22
	cmdResSRQGet = 23

	aLID         = 9
	aResSummary  = 15
	aResSumEntry = 16
	aResSumName  = 17
	aResSumCurr  = 18
	aResQP       = 19
	aResQPEntry  = 20
	aResLQPN     = 21
	aResRQPN     = 22
	aResType     = 26
	aResState    = 27
	aResPID      = 28
	aResKernName = 29
	aResCMID     = 30
	aResCMIDEnt  = 31
	aResPS       = 32
	aResSrcAddr  = 33
	aResCQ       = 35
	aResCQEntry  = 36
	aResCQE      = 37
	aResUseCnt   = 38
	aResMR       = 40
	aResMREntry  = 41
	aResMRLen    = 45
	aResPD       = 46
	aResPDEntry  = 47
	aResPDN      = 60
	aResCQN      = 61
	aResMRN      = 62
	aResCMIDN    = 63
	aResCtxN     = 64
	aStatHW      = 80
	aStatHWEntry = 81
	aStatHWName  = 82
	aStatHWValue = 83
	aResCtx      = 86
	aResCtxEntry = 87
	aResSRQ      = 88
	aResSRQEntry = 89
	aResSRQN     = 90
	aMinRange    = 91
	aMaxRange    = 92
	aCopyOnFork  = 93
	aPrivQKey    = 96
)

// kdev is one device of the kernel below.
type kdev struct {
	idx   uint32
	name  string
	ports int
	ib    bool // InfiniBand (LID, no netdev) rather than RoCE
	nouv  bool // no uverbs char device
}

// kernel is an NLDEV kernel behind an nltest connection: devices with
// ports, resources, statistics, system settings. It counts requests by
// op, and can make a device vanish right after the first device dump.
type kernel struct {
	mu     sync.Mutex // forked clients (forkingNL) ask in parallel
	t      *testing.T
	devs   []kdev
	reqs   map[uint16]int
	vanish string        // removed after the first CMD_GET
	vErrno syscall.Errno // what requests about the vanished device get
	errs   map[uint16]syscall.Errno
	sys    func(e *netlink.AttributeEncoder)
	// bad replaces the answer to an op with raw messages; with badSeq they
	// keep their own sequence number (an answer to another request).
	bad    map[uint16][]netlink.Message
	badSeq bool
}

func (k *kernel) dev(idx uint32) (kdev, bool) {
	for _, d := range k.devs {
		if d.idx == idx {
			return d, true
		}
	}
	return kdev{}, false
}

func (k *kernel) client() *nldev.Client {
	k.reqs = map[uint16]int{}
	return nldev.NewClient(nltest.Dial(k.handle))
}

func (k *kernel) handle(reqs []netlink.Message) ([]netlink.Message, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t := k.t
	req := reqs[0]
	op := uint16(req.Header.Type) & 0x3ff
	k.reqs[op]++
	answer := func(data ...[]byte) ([]netlink.Message, error) {
		out := make([]netlink.Message, len(data))
		for i, d := range data {
			out[i].Data = d
		}
		return nldevtest.Reply(req, out...)
	}
	if m, ok := k.bad[op]; ok {
		out := make([]netlink.Message, len(m))
		for i := range m {
			out[i] = m[i]
			if !k.badSeq {
				out[i].Header.Sequence = req.Header.Sequence
			}
			out[i].Header.PID = req.Header.PID
		}
		return out, nil
	}
	if en, ok := k.errs[op]; ok {
		return nldevtest.Refuse(en, req)
	}
	idx, hasIdx := devIndexOf(t, req.Data)
	d, known := k.dev(idx)
	if hasIdx && !known {
		return nldevtest.Refuse(syscall.EINVAL, req) // ib_device_get_by_index failed
	}
	if hasIdx && d.name == k.vanish && k.reqs[cmdGet] > 0 {
		return nldevtest.Refuse(k.vErrno, req)
	}
	resMsg := func(table func(e *netlink.AttributeEncoder)) ([]netlink.Message, error) {
		return answer(encode(t, func(e *netlink.AttributeEncoder) {
			e.Uint32(aDevIndex, d.idx)
			e.String(aDevName, d.name)
			table(e)
		}))
	}
	switch op {
	case cmdGet:
		var ds [][]byte
		for _, d := range k.devs {
			if d.name == k.vanish && k.reqs[cmdGet] > 1 {
				continue
			}
			ds = append(ds, encode(t, func(e *netlink.AttributeEncoder) {
				e.Uint32(aDevIndex, d.idx)
				e.String(aDevName, d.name)
				e.Uint32(aPortIndex, uint32(d.ports))
				e.Uint64(aNodeGUID, 0xa86c01fffecc5400+uint64(d.idx))
				e.Uint8(aNodeType, 1)
				if d.ib {
					e.String(aProtocol, "ib")
				} else {
					e.String(aProtocol, "roce")
				}
			}))
		}
		return answer(ds...)
	case cmdPortGet:
		// A dump answers every port; a request for one port (the kernel's
		// doit) that one, or EINVAL for a port the device lacks.
		lo, hi := 1, d.ports
		if req.Header.Flags&netlink.Dump == 0 {
			p, ok := u32Of(t, req.Data, aPortIndex)
			if !ok || p < 1 || int(p) > d.ports {
				return nldevtest.Refuse(syscall.EINVAL, req)
			}
			lo, hi = int(p), int(p)
		}
		var ps [][]byte
		for p := lo; p <= hi; p++ {
			ps = append(ps, encode(t, func(e *netlink.AttributeEncoder) {
				e.Uint32(aDevIndex, d.idx)
				e.String(aDevName, d.name)
				e.Uint32(aPortIndex, uint32(p))
				e.Uint8(aPortState, 4)
				e.Uint8(aPhysState, 5)
				if d.ib {
					e.Uint32(aLID, 7)
				} else {
					e.Uint32(aNdevIndex, 100+d.idx)
					e.String(aNdevName, "eth"+itoa(int(d.idx)))
				}
			}))
		}
		return answer(ps...)
	case cmdGetChardev:
		if d.nouv {
			return nldevtest.Refuse(syscall.ENOENT, req)
		}
		return answer(encode(t, func(e *netlink.AttributeEncoder) {
			e.String(aChardevNm, "uverbs"+itoa(int(d.idx)))
			e.Uint64(aChardevABI, 1)
			e.Uint64(aChardev, uint64(231<<8|(192+d.idx)))
			e.Uint32(aDriverID, 1)
		}))
	case cmdStatGet:
		return answer(encode(t, func(e *netlink.AttributeEncoder) {
			e.Uint32(aDevIndex, d.idx)
			e.Nested(aStatHW, func(ne *netlink.AttributeEncoder) error {
				for i, n := range []string{"sent_pkts", "rcvd_pkts", "duplicate_request"} {
					ne.Nested(aStatHWEntry, func(x *netlink.AttributeEncoder) error {
						x.String(aStatHWName, n)
						x.Uint64(aStatHWValue, uint64(10*d.idx+uint32(i)))
						return nil
					})
				}
				return nil
			})
		}))
	case cmdSysGet:
		return answer(encode(t, func(e *netlink.AttributeEncoder) { k.sys(e) }))
	case cmdResGet:
		var ms [][]byte
		for _, d := range k.devs {
			ms = append(ms, encode(t, func(e *netlink.AttributeEncoder) {
				e.Uint32(aDevIndex, d.idx)
				e.String(aDevName, d.name)
				e.Nested(aResSummary, func(ne *netlink.AttributeEncoder) error {
					for i, n := range []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"} {
						ne.Nested(aResSumEntry, func(x *netlink.AttributeEncoder) error {
							x.String(aResSumName, n)
							x.Uint64(aResSumCurr, uint64(i)+uint64(d.idx))
							return nil
						})
					}
					return nil
				})
			}))
		}
		return answer(ms...)
	case cmdResQPGet:
		// Each device: the kernel's GSI QP 1 and a user RC QP 17+idx of
		// PID 4242.
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResQP, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResQPEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aPortIndex, 1)
					x.Uint32(aResLQPN, 1)
					x.Uint8(aResType, 1)
					x.Uint8(aResState, 3)
					x.String(aResKernName, "ib_core")
					return nil
				})
				ne.Nested(aResQPEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aPortIndex, 1)
					x.Uint32(aResLQPN, 17+d.idx)
					x.Uint32(aResRQPN, 99)
					x.Uint8(aResType, 2)
					x.Uint8(aResState, 2)
					x.Uint32(aResPDN, 5)
					x.Uint32(aResPID, 4242)
					return nil
				})
				return nil
			})
		})
	case cmdResCQGet:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResCQ, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResCQEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aResCQN, 3)
					x.Uint32(aResCQE, 255)
					x.Uint64(aResUseCnt, 2)
					x.Uint32(aResCtxN, 1)
					x.Uint32(aResPID, 4242)
					return nil
				})
				return nil
			})
		})
	case cmdResMRGet:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResMR, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResMREntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aResMRN, 4)
					x.Uint64(aResMRLen, 4096)
					x.Uint32(aResPDN, 5)
					x.Uint32(aResPID, 4243) // a process that is gone
					return nil
				})
				return nil
			})
		})
	case cmdResPDGet:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResPD, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResPDEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aResPDN, 5)
					x.Uint64(aResUseCnt, 3)
					x.String(aResKernName, "ib_core")
					return nil
				})
				return nil
			})
		})
	case cmdResCMID:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResCMID, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResCMIDEnt, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aPortIndex, 1)
					x.Uint32(aResCMIDN, 7)
					x.Uint32(aResLQPN, 17+d.idx)
					x.Uint8(aResType, 2)
					x.Uint8(aResState, 8)
					x.Uint32(aResPS, 0x106)
					src := make([]byte, 128)
					src[0] = 2 // AF_INET, host order (little-endian here)
					src[2], src[3] = 0x48, 0x34
					copy(src[4:], []byte{10, 0, 0, 1})
					x.Bytes(aResSrcAddr, src)
					x.Uint32(aResPID, 4242)
					return nil
				})
				return nil
			})
		})
	case cmdResCtxGet:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResCtx, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResCtxEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aResCtxN, 1)
					x.Uint32(aResPID, 4242)
					return nil
				})
				return nil
			})
		})
	case cmdResSRQGet:
		return resMsg(func(e *netlink.AttributeEncoder) {
			e.Nested(aResSRQ, func(ne *netlink.AttributeEncoder) error {
				ne.Nested(aResSRQEntry, func(x *netlink.AttributeEncoder) error {
					x.Uint32(aResSRQN, 0)
					x.Uint8(aResType, 0)
					x.Uint32(aResPDN, 5)
					x.Uint32(aResCQN, 3)
					x.Nested(aResQP, func(q *netlink.AttributeEncoder) error {
						q.Nested(aResQPEntry, func(y *netlink.AttributeEncoder) error {
							y.Uint32(aResLQPN, 18)
							return nil
						})
						q.Nested(aResQPEntry, func(y *netlink.AttributeEncoder) error {
							y.Uint32(aMinRange, 126)
							y.Uint32(aMaxRange, 128)
							return nil
						})
						return nil
					})
					x.Uint32(aResPID, 4242)
					return nil
				})
				return nil
			})
		})
	}
	return nldevtest.Refuse(syscall.EOPNOTSUPP, req)
}

func twoRoCE(t *testing.T) *kernel {
	return &kernel{t: t, devs: []kdev{{idx: 0, name: "rxe0", ports: 1}, {idx: 1, name: "rxe1", ports: 1}}}
}

// liveSource is a live Source over k, with sysfs facts from the captured
// rxe tree and /proc from a fake tree where PID 4242 is "pingpong".
func liveSource(t *testing.T, k *kernel) *Source {
	src := LiveWith(k.client(), rxeTree)
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "4242", "comm"), []byte("pingpong\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src.res.proc = proc
	return src
}

func TestLiveDevicesPortsTargets(t *testing.T) {
	k := &kernel{t: t, devs: []kdev{{idx: 0, name: "mlx5_0", ports: 2, ib: true}, {idx: 3, name: "rxe0", ports: 1}}}
	src := liveSource(t, k)
	devs, err := src.Devices("", DeviceOptions{})
	if err != nil || len(devs) != 2 || devs[1].Name != "rxe0" || *devs[1].Index != 3 || devs[0].Protocol != "ib" || *devs[0].NumPorts != 2 {
		t.Fatalf("devices %+v %v", devs, err)
	}
	ports, err := src.Ports("", 0, PortOptions{})
	if err != nil || len(ports) != 3 {
		t.Fatalf("ports %+v %v", ports, err)
	}
	if p := ports[1]; p.Dev != "mlx5_0" || p.Port != 2 || p.LinkLayer != "InfiniBand" || *p.LID != 7 || p.Netdev != "" || *p.DevIndex != 0 {
		t.Errorf("IB port %+v", p)
	}
	if p := ports[2]; p.Dev != "rxe0" || p.LinkLayer != "Ethernet" || p.Netdev != "eth3" || *p.NetdevIndex != 103 || p.LID != nil {
		t.Errorf("RoCE port %+v", p)
	}
	refs, err := src.Targets("mlx5_0", 2)
	if err != nil || len(refs) != 1 || refs[0].Port != 2 || *refs[0].Index != 0 {
		t.Errorf("targets mlx5_0/2: %+v %v", refs, err)
	}
	refs, err = src.Targets("mlx5_0", 0)
	if err != nil || len(refs) != 2 {
		t.Errorf("targets mlx5_0: %+v %v", refs, err)
	}
	_, err = src.Targets("mlx5_0", 3)
	if err == nil || err.Error() != "no RDMA port mlx5_0/3 (ports: mlx5_0/1, mlx5_0/2)" {
		t.Errorf("unknown port: %v", err)
	}
	_, err = src.Devices("mlx5_9", DeviceOptions{})
	if err == nil || err.Error() != `no RDMA device "mlx5_9" (devices: mlx5_0, rxe0)` || !IsNotFound(err) {
		t.Errorf("unknown device: %v", err)
	}
	// However many questions: one device dump, one PORT_GET per port.
	if k.reqs[cmdGet] != 1 || k.reqs[cmdPortGet] != 3 {
		t.Errorf("requests %v: want 1 GET and 3 PORT_GET", k.reqs)
	}
}

// forkingNL is the kernel's client that can fork more, like a client
// from nldev.Dial, for the parallel per-device requests (nlFanout).
type forkingNL struct {
	*nldev.Client
	k     *kernel
	forks *atomic.Int32
}

func (f forkingNL) Fork() (*nldev.Client, error) {
	f.forks.Add(1)
	return nldev.NewClient(nltest.Dial(f.k.handle)), nil
}

// mk40 is a kernel of 40 devices: 1 or 2 ports, every third InfiniBand,
// dev5 without uverbs, dev7 vanishing after the device dump.
func mk40(t *testing.T) *kernel {
	k := &kernel{t: t, vanish: "dev7", vErrno: syscall.ENODEV}
	for i := 0; i < 40; i++ {
		k.devs = append(k.devs, kdev{idx: uint32(i), name: "dev" + itoa(i), ports: 1 + i%2, ib: i%3 == 0, nouv: i == 5})
	}
	return k
}

// TestLiveParallelPerDevice: at 40 devices (one vanishing after the device
// dump) the per-device requests run on forked sockets and give what one
// socket gives, with as many requests.
func TestLiveParallelPerDevice(t *testing.T) {
	mk := func() *kernel { return mk40(t) }
	type result struct {
		devs  []Device
		ports []Port
		refs  []PortRef
		cs    []CounterSet
		reqs  map[uint16]int
	}
	run := func(fork bool) result {
		k := mk()
		k.reqs = map[uint16]int{}
		var forks atomic.Int32
		client := func() NL {
			c := nldev.NewClient(nltest.Dial(k.handle))
			if fork {
				return forkingNL{c, k, &forks}
			}
			return c
		}
		src := LiveWith(client(), rxeTree)
		var r result
		var err error
		if r.devs, err = src.Devices("", DeviceOptions{Chardev: true, Sysfs: true}); err != nil {
			t.Fatal(err)
		}
		if r.ports, err = src.Ports("", 0, PortOptions{}); err != nil {
			t.Fatal(err)
		}
		if r.refs, err = Live(client()).Targets("", 0); err != nil {
			t.Fatal(err)
		}
		if r.cs, err = src.Counters(r.refs, nil); err != nil {
			t.Fatal(err)
		}
		// Devices, Ports, Targets (a new source), Counters: 3 forks each.
		if fork && forks.Load() != 12 {
			t.Errorf("%d forks, want 12", forks.Load())
		}
		r.reqs = k.reqs
		return r
	}
	seq, par := run(false), run(true)
	if len(seq.ports) != 58 || len(par.devs) != 40 || par.devs[5].Uverbs != "" || par.devs[6].Uverbs != "uverbs6" {
		t.Errorf("%d ports, devices %+v", len(seq.ports), par.devs)
	}
	if len(seq.cs) != 58*2+39 || seq.cs[2].Source != SrcNetlink || len(seq.cs[2].Counters) != 3 {
		t.Errorf("%d counter sets, the first three %+v", len(seq.cs), seq.cs[:3])
	}
	if !reflect.DeepEqual(seq.devs, par.devs) || !reflect.DeepEqual(seq.ports, par.ports) || !reflect.DeepEqual(seq.refs, par.refs) || !reflect.DeepEqual(seq.cs, par.cs) {
		t.Errorf("parallel differs:\n%+v\n%+v", seq.ports, par.ports)
	}
	if seq.reqs[cmdPortGet] != par.reqs[cmdPortGet] || seq.reqs[cmdGetChardev] != par.reqs[cmdGetChardev] || seq.reqs[cmdStatGet] != 58 || par.reqs[cmdStatGet] != 58 {
		t.Errorf("requests: one socket %v, forks %v", seq.reqs, par.reqs)
	}
}

func TestLiveCountersNetlink(t *testing.T) {
	k := twoRoCE(t)
	src := liveSource(t, k)
	refs, err := src.Targets("", 0)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := src.Counters(refs, []string{SrcNetlink})
	if err != nil || len(sets) != 2 {
		t.Fatalf("sets %+v %v", sets, err)
	}
	s := sets[1]
	var names []string
	for _, c := range s.Counters {
		names = append(names, c.Name)
	}
	if s.Dev != "rxe1" || s.Port != 1 || s.Source != SrcNetlink || s.Err != nil ||
		!reflect.DeepEqual(names, []string{"duplicate_request", "rcvd_pkts", "sent_pkts"}) || s.Counters[2].Value != 10 {
		t.Errorf("rxe1/1 netlink %+v", s)
	}
	if k.reqs[cmdStatGet] != 2 {
		t.Errorf("%d STAT_GET, want one per port", k.reqs[cmdStatGet])
	}
	// By default a port's hw counters are read once: from netlink where it
	// answers, without the sysfs hw_counters files.
	all, err := liveSource(t, twoRoCE(t)).Counters(refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range all {
		if set.Source == SrcHWCounters && set.Port != 0 {
			t.Errorf("default sources read sysfs hw_counters of %s/%d although netlink answered", set.Dev, set.Port)
		}
	}
	// Asked for by name, both are read.
	hw, err := liveSource(t, twoRoCE(t)).Counters(refs, []string{SrcHWCounters, SrcNetlink})
	var ports int
	for _, set := range hw {
		if set.Source == SrcHWCounters && set.Port != 0 {
			ports++
		}
	}
	if err != nil || ports != 2 {
		t.Errorf("--source hw_counters,netlink: sysfs hw_counters of %d ports (%v), want 2", ports, err)
	}
	// A kernel refusing STAT_GET: the set carries the error, sysfs stands.
	k2 := twoRoCE(t)
	k2.errs = map[uint16]syscall.Errno{cmdStatGet: syscall.EOPNOTSUPP}
	src = liveSource(t, k2)
	refs, _ = src.Targets("rxe0", 1)
	sets, err = src.Counters(refs, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := sets[len(sets)-1]
	if last.Source != SrcNetlink || !errors.Is(last.Err, syscall.EOPNOTSUPP) || len(last.Counters) != 0 {
		t.Errorf("refused STAT_GET: %+v", last)
	}
	if len(sets) < 2 || sets[len(sets)-2].Source != SrcHWCounters || len(sets[len(sets)-2].Counters) == 0 {
		t.Errorf("sysfs hw_counters of rxe0/1 missing: %+v", sets)
	}
}

func TestLiveVerbsDevices(t *testing.T) {
	k := &kernel{t: t, devs: []kdev{{idx: 0, name: "mlx5_0", ports: 1}, {idx: 1, name: "siw0", ports: 1, nouv: true}, {idx: 2, name: "mlx5_1", ports: 1}}}
	src := liveSource(t, k)
	vd, err := src.VerbsDevices()
	if err != nil {
		t.Fatal(err)
	}
	// This host has no /sys/class/infiniband_verbs: everything is
	// GET_CHARDEV's, and siw0 (ENOENT) has no uverbs device.
	if _, err := os.Stat("/sys/class/infiniband_verbs"); err == nil {
		t.Skip("this host has uverbs devices of its own")
	}
	if len(vd) != 2 || vd[0].Name != "mlx5_0" || vd[1].Uverbs != "uverbs2" || vd[1].Minor != 194 || vd[1].DriverID != 1 {
		t.Fatalf("verbs devices %+v", vd)
	}
	_, err = src.VerbsDevice("siw0")
	var nf *verbs.DeviceNotFoundError
	if !errors.As(err, &nf) || !reflect.DeepEqual(nf.Known, []string{"mlx5_0", "mlx5_1"}) {
		t.Errorf("siw0: %v", err)
	}
	if k.reqs[cmdGet] != 1 || k.reqs[cmdGetChardev] != 3 {
		t.Errorf("requests %v: want 1 GET and 3 GET_CHARDEV", k.reqs)
	}
}

func TestLiveResources(t *testing.T) {
	k := twoRoCE(t)
	src := liveSource(t, k)
	qps, err := src.QPs(ResFilter{})
	if err != nil || len(qps) != 4 {
		t.Fatalf("qps %+v %v", qps, err)
	}
	if q := qps[0]; q.DevName != "rxe0" || !q.Kernel || q.Comm != "ib_core" || q.PID != nil || q.TypeName() != "GSI" || q.StateName() != "RTS" || q.RQPN != nil {
		t.Errorf("kernel QP %+v", q)
	}
	if q := qps[3]; q.DevName != "rxe1" || q.DevIndex != 1 || q.Kernel || q.Comm != "pingpong" || *q.PID != 4242 || q.TypeName() != "RC" ||
		q.StateName() != "RTR" || *q.LQPN != 18 || *q.RQPN != 99 || *q.PDN != 5 {
		t.Errorf("user QP %+v", q)
	}
	pid, qpn := uint32(4242), uint32(18)
	qps, err = src.QPs(ResFilter{PID: &pid, LQPN: &qpn})
	if err != nil || len(qps) != 1 || qps[0].DevName != "rxe1" {
		t.Errorf("--pid 4242 --qpn 18: %+v %v", qps, err)
	}
	qps, err = src.QPs(ResFilter{Dev: "rxe0", PID: &pid})
	if err != nil || len(qps) != 1 || *qps[0].LQPN != 17 {
		t.Errorf("rxe0 --pid 4242: %+v %v", qps, err)
	}
	cqs, err := src.CQs(ResFilter{Dev: "rxe1"})
	if err != nil || len(cqs) != 1 || *cqs[0].CQE != 255 || *cqs[0].Users != 2 || cqs[0].PollCtxName() != "" || cqs[0].Comm != "pingpong" {
		t.Errorf("cqs %+v %v", cqs, err)
	}
	mrs, err := src.MRs(ResFilter{})
	if err != nil || len(mrs) != 2 || *mrs[0].Len != 4096 || *mrs[0].PID != 4243 || mrs[0].Comm != "" || mrs[0].RKey != nil {
		t.Errorf("mrs %+v %v", mrs, err)
	}
	pds, err := src.PDs(ResFilter{PID: &pid})
	if err != nil || len(pds) != 0 {
		t.Errorf("kernel PDs kept by --pid: %+v %v", pds, err)
	}
	ids, err := src.CMIDs(ResFilter{Dev: "rxe0"})
	if err != nil || len(ids) != 1 || ids[0].PSName() != "TCP" || ids[0].StateName() != "LISTEN" || ids[0].QPTypeName() != "RC" ||
		ids[0].SrcAddr != netip.MustParseAddrPort("10.0.0.1:18484") || ids[0].DstAddr.IsValid() {
		t.Errorf("cm ids %+v %v", ids, err)
	}
	ctxs, err := src.Contexts(ResFilter{})
	if err != nil || len(ctxs) != 2 || *ctxs[1].CtxN != 1 {
		t.Errorf("ctxs %+v %v", ctxs, err)
	}
	srqs, err := src.SRQs(ResFilter{Dev: "rxe1"})
	if err != nil || len(srqs) != 1 || srqs[0].TypeName() != "BASIC" || !reflect.DeepEqual(srqs[0].QPs, []nldev.QPRange{{Min: 18, Max: 18}, {Min: 126, Max: 128}}) {
		t.Errorf("srqs %+v %v", srqs, err)
	}
	sums, err := src.ResSummaries("rxe1")
	if err != nil || len(sums) != 1 || sums[0].Counts["qp"] != 3 || sums[0].DevIndex != 1 ||
		!reflect.DeepEqual(sums[0].Names, []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"}) {
		t.Errorf("summary %+v %v", sums, err)
	}
	if _, err := src.CQs(ResFilter{Dev: "rxe7"}); err == nil || !IsNotFound(err) || !strings.Contains(err.Error(), "rxe0, rxe1") {
		t.Errorf("unknown device: %v", err)
	}
	if _, err := src.ResSummaries("rxe7"); !IsNotFound(err) {
		t.Errorf("unknown device summary: %v", err)
	}
	// All of it: one device dump; each listing one dump per device it
	// covers (QPs: all, all again with filters, rxe0: 2+2+1).
	if k.reqs[cmdGet] != 1 || k.reqs[cmdResQPGet] != 2+2+1 || k.reqs[cmdResCQGet] != 1 || k.reqs[cmdResGet] != 1 {
		t.Errorf("requests %v", k.reqs)
	}
	// A captured tree has no resources.
	if _, err := Captured(rxeTree).QPs(ResFilter{}); !errors.Is(err, ErrNeedsLive) {
		t.Errorf("offline: %v", err)
	}
	if _, err := Captured(rxeTree).ResSummaries(""); !errors.Is(err, ErrNeedsLive) {
		t.Errorf("offline summary: %v", err)
	}
}

// TestLiveDeviceVanishes: rxe1 is removed between the device dump and the
// next request about it. Listings leave it out; naming it is not-found;
// an EINVAL about a device that is still there stays an error.
func TestLiveDeviceVanishes(t *testing.T) {
	for _, en := range []syscall.Errno{syscall.EINVAL, syscall.ENODEV} {
		k := twoRoCE(t)
		k.vanish, k.vErrno = "rxe1", en
		src := liveSource(t, k)
		qps, err := src.QPs(ResFilter{})
		if err != nil || len(qps) != 2 || qps[0].DevName != "rxe0" || qps[1].DevName != "rxe0" {
			t.Errorf("%v: qps %+v %v", en, qps, err)
		}
		if k.reqs[cmdGet] != 2 {
			t.Errorf("%v: %d device dumps, want the run's one and one re-check", en, k.reqs[cmdGet])
		}
		_, err = src.CQs(ResFilter{Dev: "rxe1"})
		var nf *nldev.NotFoundError
		if !errors.As(err, &nf) || nf.Name != "rxe1" || !reflect.DeepEqual(nf.Exists, []string{"rxe0"}) {
			t.Errorf("%v: named vanished device: %v", en, err)
		}
		refs, err := src.Targets("", 0)
		if err != nil || len(refs) != 1 || refs[0].Dev != "rxe0" {
			t.Errorf("%v: targets %+v %v", en, refs, err)
		}
		if _, err := src.Targets("rxe1", 1); !IsNotFound(err) {
			t.Errorf("%v: targets rxe1/1: %v", en, err)
		}
		// Its chardev: asked, refused, left out (sysfs has none here).
		devs, err := src.Devices("", DeviceOptions{Chardev: true})
		if err != nil || len(devs) != 2 || devs[1].Uverbs != "" || devs[0].Uverbs != "uverbs0" {
			t.Errorf("%v: devices %+v %v", en, devs, err)
		}
	}
	// EINVAL for a device still there: the kernel's refusal, not a vanish.
	k := twoRoCE(t)
	k.errs = map[uint16]syscall.Errno{cmdResQPGet: syscall.EINVAL}
	src := liveSource(t, k)
	if _, err := src.QPs(ResFilter{}); !errors.Is(err, syscall.EINVAL) || IsNotFound(err) {
		t.Errorf("EINVAL of a present device: %v", err)
	}
}

// TestLiveMalformed: replies the decoders cannot make sense of give
// errors or missing fields, never a panic.
func TestLiveMalformed(t *testing.T) {
	// A device dump with a truncated attribute list and a device without a
	// name: the named device keeps what came before the damage.
	k := twoRoCE(t)
	good := encode(t, func(e *netlink.AttributeEncoder) {
		e.Uint32(aDevIndex, 4)
		e.String(aDevName, "mlx5_4")
		e.Uint64(aNodeGUID, 1)
	})
	k.bad = map[uint16][]netlink.Message{cmdGet: {
		{Header: netlink.Header{Type: 5<<10 | cmdGet, Flags: netlink.Multi}, Data: good[:len(good)-3]},
		{Header: netlink.Header{Type: 5<<10 | cmdGet, Flags: netlink.Multi}, Data: []byte{8, 0, 1, 0, 9, 0, 0, 0}},
		{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi}, Data: make([]byte, 4)},
	}}
	src := liveSource(t, k)
	devs, err := src.Devices("", DeviceOptions{})
	if err != nil || len(devs) != 1 || devs[0].Name != "mlx5_4" || devs[0].NodeGUID != "" {
		t.Errorf("devices %+v %v", devs, err)
	}
	// An answer with another request's sequence number: an error.
	k = twoRoCE(t)
	k.bad = map[uint16][]netlink.Message{cmdSysGet: {{Header: netlink.Header{Type: 5<<10 | 6, Sequence: 99999}, Data: []byte{5, 0, 66, 0, 1}}}}
	k.badSeq = true
	kfeat.Reset()
	defer kfeat.Reset()
	if _, err := liveSource(t, k).System(); err == nil {
		t.Error("system: a reply to another request was accepted")
	}
	// A resource table with entries of the wrong shape: no entries, no panic.
	k = twoRoCE(t)
	k.bad = map[uint16][]netlink.Message{cmdResQPGet: {
		{Header: netlink.Header{Type: 5<<10 | cmdResQPGet, Flags: netlink.Multi}, Data: []byte{8, 0, 1, 0, 0, 0, 0, 0, 12, 0, aResQP, 0x80, 200, 0, 20, 0, 1, 2, 3, 4}},
		{Header: netlink.Header{Type: netlink.Done, Flags: netlink.Multi}, Data: make([]byte, 4)},
	}}
	qps, err := liveSource(t, k).QPs(ResFilter{})
	if err != nil || len(qps) != 0 {
		t.Errorf("malformed QP table: %+v %v", qps, err)
	}
}

func TestLiveSystem(t *testing.T) {
	kfeat.Reset()
	defer kfeat.Reset()
	k := twoRoCE(t)
	k.sys = func(e *netlink.AttributeEncoder) {
		e.Uint8(aNetnsMode, 0)
		e.Uint8(aCopyOnFork, 1)
		e.Uint8(aPrivQKey, 0)
	}
	src := liveSource(t, k)
	s, err := src.System()
	if err != nil || s.NetnsMode != "exclusive" || !*s.CopyOnFork || s.PrivilegedQKey == nil || *s.PrivilegedQKey {
		t.Fatalf("system %+v %v", s, err)
	}
	if _, err := src.System(); err != nil || k.reqs[cmdSysGet] != 1 {
		t.Errorf("SYS_GET asked %d times", k.reqs[cmdSysGet])
	}
	// A 6.1 kernel: no privileged-qkey attribute.
	k.sys = func(e *netlink.AttributeEncoder) { e.Uint8(aNetnsMode, 1); e.Uint8(aCopyOnFork, 1) }
	s, err = liveSource(t, k).System()
	if err != nil || s.NetnsMode != "shared" || s.PrivilegedQKey != nil {
		t.Errorf("6.1 system %+v %v", s, err)
	}
	// Before 5.2: no SYS_GET at all.
	k.errs = map[uint16]syscall.Errno{cmdSysGet: syscall.EOPNOTSUPP}
	if _, err := liveSource(t, k).System(); !errors.Is(err, nldev.ErrNoSystem) {
		t.Errorf("no SYS_GET: %v", err)
	}
	if _, err := Captured(rxeTree).System(); !errors.Is(err, ErrNeedsLive) {
		t.Errorf("offline: %v", err)
	}
}

// TestFanoutPanic: a worker's panic reaches the goroutine that waits, after
// every worker has stopped.
func TestFanoutPanic(t *testing.T) {
	var ran atomic.Int32
	catch := func(run func()) (r any) {
		defer func() { r = recover() }()
		run()
		return nil
	}
	work := func(i int) {
		ran.Add(1)
		if i == 5 {
			panic("decoder bug")
		}
	}
	if r := catch(func() { fanout(20, work)() }); r != "decoder bug" || ran.Load() != 20 {
		t.Errorf("fanout: recovered %v after %d calls", r, ran.Load())
	}
	ran.Store(0)
	k := mk40(t)
	k.reqs = map[uint16]int{}
	var forks atomic.Int32
	src := Live(forkingNL{nldev.NewClient(nltest.Dial(k.handle)), k, &forks})
	if r := catch(func() { src.b.portFanout(20, func(_ NL, i int) { work(i) }) }); r != "decoder bug" || ran.Load() != 20 || forks.Load() != 3 {
		t.Errorf("nlFanout: recovered %v after %d calls, %d forks", r, ran.Load(), forks.Load())
	}
}

// TestLiveDeviceSysfs: the sysfs facts of a device with a parent device
// (mlx5_0 from the captured mlx5 tree) are read; a device without one
// (rxe0) is not asked for board files, which only hardware drivers add:
// here rxe0 has them, planted, and they stay empty.
func TestLiveDeviceSysfs(t *testing.T) {
	root := t.TempDir()
	ib := filepath.Join(root, "class", "infiniband")
	src := filepath.Join(mlx5Tree, "class", "infiniband", "mlx5_0")
	for _, dev := range []string{"mlx5_0", "rxe0"} {
		if err := os.MkdirAll(filepath.Join(ib, dev), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"board_id", "hca_type", "hw_rev", "node_desc"} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ib, dev, f), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink("../../../devices/pci0000:00/0000:00:02.0/0000:03:00.0", filepath.Join(ib, "mlx5_0", "device")); err != nil {
		t.Fatal(err)
	}
	k := &kernel{t: t, devs: []kdev{{idx: 0, name: "mlx5_0", ports: 2, ib: true}, {idx: 3, name: "rxe0", ports: 1}}}
	devs, err := LiveWith(k.client(), root).Devices("", DeviceOptions{Sysfs: true, Board: true, Details: true})
	if err != nil || len(devs) != 2 {
		t.Fatalf("devices %+v %v", devs, err)
	}
	m := devs[0]
	if m.BoardID != "MT_0000000010" || m.HCAType != "MT4119" || m.HWRev != "0x0" || m.NodeDesc != "host1 mlx5_0" || m.PCIAddr != "0000:03:00.0" {
		t.Errorf("mlx5_0: %+v", m)
	}
	r := devs[1]
	if r.BoardID != "" || r.HCAType != "" || r.HWRev != "" || r.PCIAddr != "" || r.NUMANode != nil || r.Driver != "rdma_rxe" || r.NodeDesc != "host1 mlx5_0" {
		t.Errorf("rxe0: %+v", r)
	}
}
