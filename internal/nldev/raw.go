package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
)

// Raw resource dumps (rdma -r): RDMA_NLDEV_CMD_RES_{QP,CQ,MR,SRQ}_GET_RAW
// return, per object, the driver's own binary image of it (the hardware
// context) in RDMA_NLDEV_ATTR_RES_RAW. Only drivers with
// fill_res_*_entry_raw have them (mlx5; hns and bnxt_re on newer kernels);
// for any other driver the kernel fails the dump with EINVAL as soon as it
// meets an object (an empty list is no error). QP, CQ and MR raw commands
// came with Linux 5.9, SRQ's after 6.1: a kernel without the command
// answers EINVAL too (RDMA netlink's check of the op; seen on 6.1).

// RAW commands (enum rdma_nldev_command).
const (
	cmdResQPGetRaw  = 19
	cmdResCQGetRaw  = 20
	cmdResMRGetRaw  = 21
	cmdResSRQGetRaw = 25
	attrResRaw      = 85 // binary
)

// RawEntry is one object of a raw dump: its device, its port when the
// kernel says (QPs), and the driver's bytes.
type RawEntry struct {
	DevIndex uint32
	DevName  string
	Port     *uint32
	Data     []byte
}

// rawOps maps a resource name to its raw command and entry table.
var rawOps = map[string]struct{ op, table, entry uint16 }{
	"qp":  {cmdResQPGetRaw, attrResQP, attrResQPEntry},
	"cq":  {cmdResCQGetRaw, attrResCQ, attrResCQEntry},
	"mr":  {cmdResMRGetRaw, attrResMR, attrResMREntry},
	"srq": {cmdResSRQGetRaw, attrResSRQ, attrResSRQEntry},
}

// RawObjects says whether obj ("qp", "cq", "mr", "srq") has a raw dump.
func RawObjects(obj string) bool { _, ok := rawOps[obj]; return ok }

// RawOf dumps obj raw on each device of devs, in order, as rdma -r does:
// one dump per device with DEV_INDEX (and PORT_INDEX when port is not 0),
// flags REQUEST|ACK|DUMP. The first device the kernel refuses ends it,
// with that device's name and a *KernelError.
func (c *Client) RawOf(obj string, devs []Device, port uint32) ([]RawEntry, error) {
	r, ok := rawOps[obj]
	if !ok {
		return nil, fmt.Errorf("%s has no raw dump (only qp, cq, mr, srq)", obj)
	}
	var out []RawEntry
	for _, d := range devs {
		var e encoder
		e.u32(attrDevIndex, d.Index)
		if port != 0 {
			e.u32(attrPortIndex, port)
		}
		msgs, err := execute(c.c, msgType(r.op), flagRequest|uint16(netlink.Acknowledge)|flagDump, e.b)
		if err != nil {
			var en syscall.Errno
			op := opNames[r.op]
			if errors.As(err, &en) {
				return out, fmt.Errorf("%s: %w", d.Name, &KernelError{Op: op, Errno: en})
			}
			return out, fmt.Errorf("%s: netlink %s: %w", d.Name, op, err)
		}
		for _, m := range msgs {
			if uint16(m.Header.Type) != msgType(r.op) {
				continue
			}
			out = append(out, decodeRaw(m.Data, r.table, r.entry)...)
		}
	}
	return out, nil
}

// decodeRaw reads one answer of a raw dump; entries without RES_RAW are
// left out (they carry nothing rdma -r would print).
func decodeRaw(m []byte, table, entry uint16) []RawEntry {
	a := parseAttrs(m)
	h := RawEntry{DevName: a.str(attrDevName)}
	if v := a.u32(attrDevIndex); v != nil {
		h.DevIndex = *v
	}
	var out []RawEntry
	for _, e := range a.entries(table, entry) {
		b, ok := e.get(attrResRaw)
		if !ok {
			continue
		}
		r := h
		r.Port = e.u32(attrPortIndex)
		r.Data = append([]byte{}, b...)
		out = append(out, r)
	}
	return out
}
