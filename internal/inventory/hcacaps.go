package inventory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
)

// HCACaps is what an mlx5 (ConnectX) device's firmware reports through
// DEVX (rdmactl dev hca-caps). Parts the device or the kernel refused are
// absent and named in Unavailable with the reason.
type HCACaps struct {
	Device string
	Driver string
	DevX   bool // a DEVX context (CAP_NET_RAW); without it only Caps
	// Caps maps each capability page (general, roce, odp, atomic, qos) to
	// its fields under mlx5_ifc.h's names; Pages lists the pages present
	// and Order each page's fields, in the firmware layout's order.
	Caps  map[string]map[string]uint64
	Pages []string
	Order map[string][]string
	// VportCounters: "<counter>_packets"/"<counter>_octets"; order in
	// Order["vport_counters"]. Nil when unavailable.
	VportCounters map[string]uint64
	// CongStatus: per congestion protocol (rroce_rp, rroce_np), the
	// priorities 0..7 on which it is enabled. Nil when unavailable.
	CongStatus  map[string][]int
	Unavailable []string
}

// HCASession is an open mlx5 device that runs PRM commands.
type HCASession interface {
	mlx5cmd.Runner
	Close() error
}

// HCACaps asks the mlx5 device called name, or every mlx5 device, for
// its capabilities. A named device of another driver gives an error
// matching IsUnsupported, as does a system without any mlx5 device.
func (s *Source) HCACaps(name string) ([]HCACaps, error) {
	var devs []verbs.Device
	if name != "" {
		d, err := s.VerbsDevice(name)
		if err != nil {
			return nil, err
		}
		if d.DriverID != verbs.DriverMLX5 {
			return nil, fmt.Errorf("%w; hca-caps needs an mlx5 (ConnectX) device", &mlx5.NotMLX5Error{Device: d.Name, Driver: d.Driver})
		}
		devs = append(devs, d)
	} else {
		all, err := s.VerbsDevices()
		if err != nil {
			return nil, err
		}
		var others []string
		for _, d := range all {
			if d.DriverID == verbs.DriverMLX5 {
				devs = append(devs, d)
			} else {
				others = append(others, d.Name+" ("+d.Driver+")")
			}
		}
		if len(devs) == 0 {
			found := "no RDMA devices"
			if len(others) > 0 {
				found = "only " + strings.Join(others, ", ")
			}
			return nil, &unsupportedError{"no mlx5 (ConnectX) device: found " + found}
		}
	}
	var out []HCACaps
	for _, d := range devs {
		sess, devx, err := OpenHCA(d)
		if err != nil {
			return nil, err
		}
		c, err := QueryHCACaps(sess, d, devx)
		sess.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, *c)
	}
	return out, nil
}

// OpenHCA opens d with a DEVX context (needs CAP_NET_RAW); without the
// capability it falls back to an ordinary context, where the kernel still
// lets QUERY_HCA_CAP through (its DEVX whitelist) if the device has a
// whitelist uid. devx says which it got.
func OpenHCA(d verbs.Device) (s HCASession, devx bool, err error) {
	ctx, err := mlx5.OpenDevX(d)
	if err == nil {
		return ctx, true, nil
	}
	if !verbs.IsPermission(err) {
		return nil, false, err
	}
	plain, err2 := verbs.OpenDevice(d, verbs.Options{})
	if err2 != nil {
		return nil, false, err2
	}
	return mlx5.DevX{Context: plain}, false, nil
}

// QueryHCACaps reads everything from one open device (devx: the session
// is a DEVX context). A failure of the first capability page fails the
// device; later parts are optional.
func QueryHCACaps(s mlx5cmd.Runner, d verbs.Device, devx bool) (*HCACaps, error) {
	j := &HCACaps{Device: d.Name, Driver: d.Driver, DevX: devx, Caps: map[string]map[string]uint64{}, Order: map[string][]string{}}
	for i, ct := range mlx5cmd.CapTypes {
		vs, err := mlx5cmd.QueryHCACap(s, ct)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("%s: %w", d.Name, hcaCapsHint(err, devx))
			}
			j.Unavailable = append(j.Unavailable, firstLine(err.Error()))
			continue
		}
		page := map[string]uint64{}
		for _, v := range vs {
			page[v.Name] = v.Value
			j.Order[ct.String()] = append(j.Order[ct.String()], v.Name)
		}
		j.Caps[ct.String()] = page
		j.Pages = append(j.Pages, ct.String())
	}
	if !devx {
		j.Unavailable = append(j.Unavailable, "vport counters and congestion status: need a DEVX context (CAP_NET_RAW)")
		return j, nil
	}
	if vc, err := mlx5cmd.QueryVportCounter(s, 0); err != nil {
		j.Unavailable = append(j.Unavailable, firstLine(err.Error()))
	} else {
		j.VportCounters = map[string]uint64{}
		for _, v := range vc {
			j.VportCounters[v.Name] = v.Value
			j.Order["vport_counters"] = append(j.Order["vport_counters"], v.Name)
		}
	}
	j.CongStatus = map[string][]int{}
	for _, p := range []struct {
		name  string
		proto uint8
	}{{"rroce_rp", mlx5cmd.CongProtocolRRoCERP}, {"rroce_np", mlx5cmd.CongProtocolRRoCENP}} {
		prios := []int{}
		for prio := uint8(0); prio < 8; prio++ {
			st, err := mlx5cmd.QueryCongStatus(s, p.proto, prio)
			if err != nil {
				j.Unavailable = append(j.Unavailable, firstLine(err.Error()))
				prios = nil
				break
			}
			if st.Enable {
				prios = append(prios, int(prio))
			}
		}
		if prios != nil {
			j.CongStatus[p.name] = prios
		}
	}
	if len(j.CongStatus) == 0 {
		j.CongStatus = nil
	}
	return j, nil
}

// hcaCapsHint adds what to do when the kernel refuses the first query.
func hcaCapsHint(err error, devx bool) error {
	if !devx && (errors.Is(err, verbs.ErrUnsupported) || verbs.IsPermission(err)) {
		return fmt.Errorf("%w (without CAP_NET_RAW there is no DEVX context and this kernel/device does not allow QUERY_HCA_CAP otherwise: run as root)", err)
	}
	return err
}

// firstLine is s up to its first newline, trimmed: one entry of a list.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
