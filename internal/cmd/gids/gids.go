package gids

import (
	"fmt"
	"net/netip"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/vocab"
	"github.com/spf13/cobra"
)

// gidJSON is one GID table entry in `rdmactl -j gids`.
//
// Keys: ifname/port as rdma -j; index is the GID index to pass to a
// benchmark (-x/--gid-index); gid is the text sysfs prints (ibv_devinfo -v
// prints the same address compressed), "?" for a slot whose gids/N could
// not be read (listed only with --all);
// type is "IB", "RoCE v1" or "RoCE v2" (sysfs's "IB/RoCE v1" is split by the
// port's link layer: IB on InfiniBand, RoCE v1 on Ethernet) and
// sysfs_type the raw gid_attrs/types string. netdev, ipv4, ipv6, type and
// sysfs_type are null when not applicable or unknown (IB GIDs have no
// netdev; an IPv4-mapped GID has no ipv6 and the other way round), so every
// object has the same keys.
type gidJSON struct {
	Ifname    string  `json:"ifname"`
	Port      uint32  `json:"port"`
	Index     uint32  `json:"index"`
	GID       string  `json:"gid"`
	Type      *string `json:"type"`
	SysfsType *string `json:"sysfs_type"`
	Netdev    *string `json:"netdev"`
	IPv4      *string `json:"ipv4"`
	IPv6      *string `json:"ipv6"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type gidsFlags struct {
	all     bool
	netdev  string
	ip      string
	typ     string
	ipv4    bool
	ipv6    bool
	best    bool
	ipAddr  netip.Addr
	wantTyp vocab.GIDType // vocab.GIDTypeUnknown: no --type
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var fl gidsFlags
	c := &cobra.Command{
		Use:   "gids [DEV[/PORT]]",
		Short: "Show GID tables: index, GID, type (IB, RoCE v1, RoCE v2), netdev, IP (like show_gids)",
		Long: `Show the GID table of every RDMA port, or of DEV or DEV/PORT: from the device
(uverbs QUERY_GID_TABLE, one call per device, kernel 5.10+), else, and with
--all, from /sys/class/infiniband/DEV/ports/PORT/{gids,gid_attrs}.

TYPE is IB, RoCE v1 or RoCE v2. sysfs writes "IB/RoCE v1" for both IB and
RoCE v1 GIDs: on an InfiniBand port it is shown as IB, on an Ethernet port as
RoCE v1. IPV4/IPV6 is the address the GID maps (RoCE GIDs are the netdev's IP
addresses; IPv4 appears as the IPv4-mapped ::ffff:a.b.c.d).

Empty slots are hidden unless --all. Filters combine (AND); --ipv4 and
--ipv6 together keep both families. --best keeps, per port, the one entry
perftest would choose without -x among the remaining ones: IPv4 unless
--ipv6, then a global address over a link-local one (fe80::, 169.254), then
RoCE v2 over v1, then the lowest index (perftest's rule since 2026-04; 6.06
keeps fe80:: before a global IPv6 address).`,
		Example: `  rdmactl gids
  rdmactl gids rxe0/1 --all
  # the GID index to pass to a benchmark for RoCE v2 over IPv4 on eth0:
  rdmactl -j gids --netdev eth0 --type v2 --ipv4 | jq '.[0].index'
  rdmactl gids --ip 10.77.0.1
  rdmactl gids mlx5_0 --best`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := fl.validate(); err != nil {
				return err
			}
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return runGIDs(a, arg, &fl)
		},
	}
	f := c.Flags()
	f.BoolVar(&fl.all, "all", false, "also show empty slots")
	f.StringVar(&fl.netdev, "netdev", "", "only GIDs of netdev `NAME`")
	f.StringVar(&fl.ip, "ip", "", "only the GID of IP address `ADDR` (IPv4 or IPv6)")
	f.StringVar(&fl.typ, "type", "", "only GIDs of type `v1|v2|ib` (RoCE v1, RoCE v2, IB)")
	f.BoolVar(&fl.ipv4, "ipv4", false, "only IPv4-mapped GIDs")
	f.BoolVar(&fl.ipv6, "ipv6", false, "only non-IPv4 GIDs (with --best: prefer IPv6)")
	f.BoolVar(&fl.best, "best", false, "per port, only the GID perftest would pick by default")
	return c
}

func (fl *gidsFlags) validate() error {
	if fl.ip != "" {
		a, err := netip.ParseAddr(fl.ip)
		if err != nil {
			return cmdutil.UsageErrorf("--ip %q is not an IP address (try --ip 192.168.1.10 or --ip fe80::1)", fl.ip)
		}
		fl.ipAddr = a.Unmap()
	}
	fl.wantTyp = vocab.GIDTypeUnknown
	if fl.typ != "" {
		t, ok := vocab.ParseGIDTypeFlag(fl.typ)
		if !ok {
			return cmdutil.UsageErrorf("--type %q: want v1, v2 or ib", fl.typ)
		}
		fl.wantTyp = t
	}
	return nil
}

// keep applies the filters to one GID.
func (fl *gidsFlags) keep(g inventory.GID) bool {
	if g.Empty() {
		// Empty slots only with --all and no filter that needs an entry.
		return fl.all && fl.netdev == "" && fl.ip == "" && fl.wantTyp == vocab.GIDTypeUnknown && !fl.ipv4 && !fl.ipv6 && !fl.best
	}
	if fl.netdev != "" && g.Netdev != fl.netdev {
		return false
	}
	if fl.ip != "" && g.Addr() != fl.ipAddr {
		return false
	}
	if fl.wantTyp != vocab.GIDTypeUnknown && g.Kind != fl.wantTyp {
		return false
	}
	if fl.ipv4 != fl.ipv6 { // one of them: filter; both or neither: keep all
		if fl.ipv4 != g.IPv4().IsValid() {
			return false
		}
	}
	return true
}

func runGIDs(a *cmdutil.App, arg string, fl *gidsFlags) error {
	dev, port, err := cmdutil.ParseDevPort(arg)
	if err != nil {
		return err
	}
	src, closeSrc, err := a.OpenInventory(true)
	if err != nil {
		return err
	}
	defer closeSrc()
	targets, err := src.Targets(dev, port)
	if err != nil {
		return err
	}
	// --all shows the empty slots too, which only sysfs lists.
	tables, err := src.GIDs(targets, fl.all)
	if err != nil {
		return err
	}
	var rows []gidJSON
	for ti, t := range targets {
		gids := tables[ti]
		var kept []inventory.GID
		for _, g := range gids {
			if fl.keep(g) {
				kept = append(kept, g)
			}
		}
		if fl.best {
			b, ok := inventory.BestGID(kept, fl.ipv6 && !fl.ipv4)
			kept = nil
			if ok {
				kept = []inventory.GID{b}
			}
		}
		for _, g := range kept {
			r := gidJSON{Ifname: t.Dev, Port: t.Port, Index: g.Index, GID: g.String(),
				Type: strPtr(g.Kind.String()), SysfsType: strPtr(g.Type), Netdev: strPtr(g.Netdev)}
			if !g.RawOK {
				r.GID = "?" // unreadable or malformed gids/N
			}
			if v4 := g.IPv4(); v4.IsValid() {
				r.IPv4 = strPtr(v4.String())
			} else if v6 := g.IPv6(); v6.IsValid() {
				r.IPv6 = strPtr(v6.String())
			}
			rows = append(rows, r)
		}
	}
	if a.Opts.JSON {
		return cmdutil.PrintList(a, rows)
	}
	tb := render.NewTable(a.Stdout, "DEV", "PORT", "INDEX", "GID", "TYPE", "NETDEV", "IP")
	for _, r := range rows {
		ip := ""
		if r.IPv4 != nil {
			ip = *r.IPv4
		} else if r.IPv6 != nil {
			ip = *r.IPv6
		}
		tb.Row(r.Ifname, r.Port, r.Index, r.GID, deref(r.Type), deref(r.Netdev), ip)
	}
	if err := tb.Flush(); err != nil {
		return err
	}
	if len(rows) == 0 {
		fmt.Fprintln(a.Stderr, "rdmactl: no GID matches (try --all, or fewer filters)")
	}
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
