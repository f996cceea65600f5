package inventory

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Driver details and raw dumps (rdma -dd, rdma -r): both exist only where
// a driver fills them (mlx5, hns, bnxt_re...). rxe and siw fill neither:
// their entries carry no DRIVER table, and the kernel refuses a raw dump
// of their objects with EINVAL.

// DriverDetailer is the client switch behind SetDriverDetails
// (*nldev.Client has it).
type DriverDetailer interface{ SetDriverDetails(on bool) }

// SetDriverDetails makes the source's resource requests ask for driver
// details, as rdma -dd does; a source without the switch ignores it.
func (s *Source) SetDriverDetails(on bool) {
	if l, err := s.b.running("driver details"); err == nil {
		if d, ok := l.nl.(DriverDetailer); ok {
			d.SetDriverDetails(on)
		}
	}
}

// RawNL is the raw dump of the NLDEV client.
type RawNL interface {
	RawOf(obj string, devs []nldev.Device, port uint32) ([]nldev.RawEntry, error)
}

// Raw dumps obj ("qp", "cq", "mr" or "srq") raw on the devices f selects
// (f.Dev; f's other fields do not apply: a raw entry has no fields to
// match), port 0 meaning all ports. A device the kernel refuses ends the
// dump with its error; one removed meanwhile is left out (or is a
// *NotFoundError when named), as for the other resource lists.
func (s *Source) Raw(obj string, f ResFilter, port uint32) ([]nldev.RawEntry, error) {
	if !nldev.RawObjects(obj) {
		return nil, fmt.Errorf("%s has no raw dump (only qp, cq, mr and srq have)", obj)
	}
	l, _, devs, err := s.resDevs(f)
	if err != nil {
		return nil, err
	}
	r, ok := l.nl.(RawNL)
	if !ok {
		return nil, fmt.Errorf("this netlink client cannot dump resources raw")
	}
	var out []nldev.RawEntry
	err = l.eachDev(devs, f.Dev != "", func(d nldev.Device) error {
		es, err := r.RawOf(obj, []nldev.Device{d}, port)
		out = append(out, es...)
		return err
	})
	return out, err
}
