package resobj

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Head is the device every object's JSON starts with.
type Head struct {
	Ifindex uint32 `json:"ifindex"`
	Ifname  string `json:"ifname"`
}

func head(h nldev.ResHead) Head { return Head{Ifindex: h.DevIndex, Ifname: h.DevName} }

// ownerJSON is the process that holds an object.
type ownerJSON struct {
	PID  *uint32 `json:"pid,omitempty"`
	Comm string  `json:"comm,omitempty"`
}

func owner(o inventory.Owner) ownerJSON { return ownerJSON{PID: o.PID, Comm: o.Comm} }

// commText brackets kernel owners in the table, as rdma's text output.
func commText(o inventory.Owner) string {
	if o.Kernel {
		return "[" + o.Comm + "]"
	}
	return o.Comm
}

// Link is a QP's or CM ID's DEV/PORT, DEV/- before it has a port.
func Link(dev string, port *uint32) string {
	if port == nil {
		return dev + "/-"
	}
	return fmt.Sprintf("%s/%d", dev, *port)
}

// Table cells of optional fields: nil (the table's empty mark) when the
// kernel did not report the field.

func hex32(p *uint32) any {
	if p == nil {
		return nil
	}
	return fmt.Sprintf("0x%x", *p)
}

func hex64(p *uint64) any {
	if p == nil {
		return nil
	}
	return fmt.Sprintf("0x%x", *p)
}
