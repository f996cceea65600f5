package sysfs

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Port is what /sys/class/infiniband/<dev>/ports/<n> says about one port.
// Missing or malformed files leave the field "" or nil.
type Port struct {
	Device string `json:"ifname"`
	Port   uint32 `json:"port"`
	// State is the label of "4: ACTIVE" (DOWN, INIT, ARMED, ACTIVE,
	// ACTIVE_DEFER), StateNum its number.
	State    string  `json:"state,omitempty"`
	StateNum *uint32 `json:"state_num,omitempty"`
	// PhysState is the label of "5: LinkUp" (Sleep, Polling, Disabled,
	// PortConfigurationTraining, LinkUp, LinkErrorRecovery, Phy Test).
	PhysState    string  `json:"physical_state,omitempty"`
	PhysStateNum *uint32 `json:"physical_state_num,omitempty"`
	// Rate is the raw rate text ("100 Gb/sec (4X EDR)"); RateGbps, Width
	// ("4X") and Speed ("EDR", may be "") are parsed from it.
	Rate      string   `json:"rate,omitempty"`
	RateGbps  *float64 `json:"rate_gbps,omitempty"`
	Width     string   `json:"width,omitempty"`
	Speed     string   `json:"speed,omitempty"`
	LID       *uint32  `json:"lid,omitempty"`
	SMLID     *uint32  `json:"sm_lid,omitempty"`
	LMC       *uint32  `json:"lmc,omitempty"` // lid_mask_count
	SMSL      *uint32  `json:"sm_sl,omitempty"`
	CapMask   *uint32  `json:"cap_mask,omitempty"`
	LinkLayer string   `json:"link_layer,omitempty"` // "InfiniBand" or "Ethernet"
	// GIDTableLen is the number of GID slots (entries of gids/), populated or not.
	GIDTableLen int `json:"gid_tbl_len"`
	// PKeys are the populated P_Key table entries (pkeys/N), by index order.
	PKeys []uint32 `json:"pkeys,omitempty"`
}

// Port reads one port's attributes. An unknown device or port gives a
// *NotFoundError listing what exists.
func (f *FS) Port(dev string, port uint32) (*Port, error) {
	if err := f.checkPort(dev, port); err != nil {
		return nil, err
	}
	dir := f.portDir(dev, port)
	p := &Port{Device: dev, Port: port}
	if n, l, ok := parseNumLabel(readOpt(filepath.Join(dir, "state"))); ok {
		p.State, p.StateNum = l, &n
	}
	if n, l, ok := parseNumLabel(readOpt(filepath.Join(dir, "phys_state"))); ok {
		p.PhysState, p.PhysStateNum = l, &n
	}
	// rate can fail to read (EINVAL for an invalid width), then stays "".
	if r, ok := readString(filepath.Join(dir, "rate")); ok {
		p.Rate = r
		if rt, ok := vocab.ParseRate(r); ok {
			p.RateGbps, p.Width, p.Speed = &rt.Gbps, rt.Width, rt.Speed
		}
	}
	p.LID, _ = parseU32(readOpt(filepath.Join(dir, "lid")))
	p.SMLID, _ = parseU32(readOpt(filepath.Join(dir, "sm_lid")))
	p.LMC, _ = parseU32(readOpt(filepath.Join(dir, "lid_mask_count")))
	p.SMSL, _ = parseU32(readOpt(filepath.Join(dir, "sm_sl")))
	p.CapMask, _ = parseU32(readOpt(filepath.Join(dir, "cap_mask")))
	p.LinkLayer = readOpt(filepath.Join(dir, "link_layer"))
	p.GIDTableLen = len(indexEntries(filepath.Join(dir, "gids")))
	for _, i := range indexEntries(filepath.Join(dir, "pkeys")) {
		if v, ok := parseU32(readOpt(filepath.Join(dir, "pkeys", itoa(i)))); ok && *v != 0 {
			p.PKeys = append(p.PKeys, *v)
		}
	}
	return p, nil
}

// indexEntries lists the numeric file names of dir ("0".."1023"), sorted.
func indexEntries(dir string) []uint32 {
	ents, _ := os.ReadDir(dir)
	idx := make([]uint32, 0, len(ents))
	for _, e := range ents {
		if v, ok := parseUint(e.Name(), 32); ok && e.Name() == itoa(uint32(v)) {
			idx = append(idx, uint32(v))
		}
	}
	slices.Sort(idx)
	return idx
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
