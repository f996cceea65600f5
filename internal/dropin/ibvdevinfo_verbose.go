package dropin

import (
	"bufio"
	"fmt"
	"net/netip"
	"strings"

	"github.com/rdmactl/rdmactl/internal/render"
)

// The lines ibv_devinfo -v adds, as rdma-core 44 prints them
// (libibverbs/examples/devinfo.c print_hca_cap and its helpers). Flag
// names print one a line after five tabs, unknown bits last as
// "Unknown flags: 0x%X".

func printFlagLines(w *bufio.Writer, names []string) {
	for _, n := range names {
		if strings.HasPrefix(n, "0x") {
			n = "Unknown flags: " + n
		}
		fmt.Fprintf(w, "\t\t\t\t\t%s\n", n)
	}
}

// printDevVerbose is what -v prints after phys_port_cnt.
// intLine is one "key:<tabs>value" line of devinfo.c whose C field is an
// int printed with %d.
type intLine struct {
	tabs, k string
	v       uint32
}

func printIntLines(w *bufio.Writer, lines []intLine) {
	for _, l := range lines {
		fmt.Fprintf(w, "\t%s:%s%d\n", l.k, l.tabs, int32(l.v))
	}
}

func printDevVerbose(w *bufio.Writer, d *render.DevInfo) {
	fmt.Fprintf(w, "\tmax_mr_size:\t\t\t0x%x\n", d.MaxMRSize)
	fmt.Fprintf(w, "\tpage_size_cap:\t\t\t0x%x\n", d.PageSizeCap)
	fmt.Fprintf(w, "\tmax_qp:\t\t\t\t%d\n", int32(d.MaxQP))
	fmt.Fprintf(w, "\tmax_qp_wr:\t\t\t%d\n", int32(d.MaxQPWR))
	fmt.Fprintf(w, "\tdevice_cap_flags:\t\t0x%08x\n", d.DeviceCapFlags)
	printFlagLines(w, d.DeviceCapFlagsNames)
	printIntLines(w, []intLine{
		{"\t\t\t", "max_sge", d.MaxSGE}, {"\t\t\t", "max_sge_rd", d.MaxSGERd},
		{"\t\t\t\t", "max_cq", d.MaxCQ}, {"\t\t\t", "max_cqe", d.MaxCQE},
		{"\t\t\t\t", "max_mr", d.MaxMR}, {"\t\t\t\t", "max_pd", d.MaxPD},
		{"\t\t\t", "max_qp_rd_atom", d.MaxQPRdAtom}, {"\t\t\t", "max_ee_rd_atom", d.MaxEERdAtom},
		{"\t\t", "max_res_rd_atom", d.MaxResRdAtom}, {"\t\t", "max_qp_init_rd_atom", d.MaxQPInitRdAtom},
		{"\t\t", "max_ee_init_rd_atom", d.MaxEEInitRdAtom},
	})
	fmt.Fprintf(w, "\tatomic_cap:\t\t\t%s (%d)\n", d.AtomicCapName, int32(d.AtomicCap))
	printIntLines(w, []intLine{
		{"\t\t\t\t", "max_ee", d.MaxEE}, {"\t\t\t", "max_rdd", d.MaxRDD}, {"\t\t\t\t", "max_mw", d.MaxMW},
		{"\t\t", "max_raw_ipv6_qp", d.MaxRawIPv6QP}, {"\t\t", "max_raw_ethy_qp", d.MaxRawEthyQP},
		{"\t\t\t", "max_mcast_grp", d.MaxMcastGrp}, {"\t\t", "max_mcast_qp_attach", d.MaxMcastQPAttach},
		{"\t", "max_total_mcast_qp_attach", d.MaxTotalMcastQPAttach},
		{"\t\t\t\t", "max_ah", d.MaxAH}, {"\t\t\t", "max_fmr", d.MaxFMR},
	})
	if d.MaxFMR != 0 {
		fmt.Fprintf(w, "\tmax_map_per_fmr:\t\t%d\n", int32(d.MaxMapPerFMR))
	}
	fmt.Fprintf(w, "\tmax_srq:\t\t\t%d\n", int32(d.MaxSRQ))
	if d.MaxSRQ != 0 {
		fmt.Fprintf(w, "\tmax_srq_wr:\t\t\t%d\n", int32(d.MaxSRQWR))
		fmt.Fprintf(w, "\tmax_srq_sge:\t\t\t%d\n", int32(d.MaxSRQSGE))
	}
	fmt.Fprintf(w, "\tmax_pkeys:\t\t\t%d\n", d.MaxPkeys)
	fmt.Fprintf(w, "\tlocal_ca_ack_delay:\t\t%d\n", d.LocalCAAckDelay)

	// General ODP caps have no "NO SUPPORT" line; the per-transport ones do.
	fmt.Fprintf(w, "\tgeneral_odp_caps:\n")
	printFlagLines(w, d.GeneralODPCapsNames)
	for _, t := range []struct {
		k string
		v uint32
	}{{"rc", d.RCODPCaps}, {"uc", d.UCODPCaps}, {"ud", d.UDODPCaps}, {"xrc", d.XRCODPCaps}} {
		fmt.Fprintf(w, "\t%s_odp_caps:\n", t.k)
		if t.v == 0 {
			fmt.Fprintf(w, "\t\t\t\t\tNO SUPPORT\n")
		}
		printFlagLines(w, render.ODPTransportNames44(t.v))
	}
	if d.CompletionTimestampMask != 0 {
		fmt.Fprintf(w, "\tcompletion timestamp_mask:\t\t\t0x%016x\n", d.CompletionTimestampMask)
	} else {
		fmt.Fprintf(w, "\tcompletion_timestamp_mask not supported\n")
	}
	if d.HCACoreClock != 0 {
		fmt.Fprintf(w, "\thca_core_clock:\t\t\t%dkHZ\n", d.HCACoreClock)
	} else {
		fmt.Fprintf(w, "\tcore clock not supported\n")
	}
	if d.RawPacketCaps != 0 {
		// Only the four known bits; no line for the others.
		fmt.Fprintf(w, "\traw packet caps:\n")
		for _, n := range d.RawPacketCapsNames {
			if !strings.HasPrefix(n, "0x") {
				fmt.Fprintf(w, "\t\t\t\t\t%s\n", n)
			}
		}
	}
	fmt.Fprintf(w, "\tdevice_cap_flags_ex:\t\t0x%X\n", d.DeviceCapFlagsEx)
	printFlagLines(w, render.DeviceCapExHighNames44(d.DeviceCapFlagsEx))

	fmt.Fprintf(w, "\ttso_caps:\n")
	fmt.Fprintf(w, "\t\tmax_tso:\t\t\t%d\n", int32(d.TSOCaps.MaxTSO))
	if d.TSOCaps.MaxTSO != 0 {
		fmt.Fprintf(w, "\t\tsupported_qp:\n")
		printFlagLines(w, render.QPTNames44(d.TSOCaps.SupportedQPTs))
	}
	r := &d.RSSCaps
	fmt.Fprintf(w, "\trss_caps:\n")
	fmt.Fprintf(w, "\t\tmax_rwq_indirection_tables:\t\t\t%d\n", r.MaxRWQIndirectionTables)
	fmt.Fprintf(w, "\t\tmax_rwq_indirection_table_size:\t\t\t%d\n", r.MaxRWQIndirectionTableSize)
	fmt.Fprintf(w, "\t\trx_hash_function:\t\t\t\t0x%x\n", r.RxHashFunction)
	fmt.Fprintf(w, "\t\trx_hash_fields_mask:\t\t\t\t0x%X\n", r.RxHashFieldsMask)
	if r.SupportedQPTs != 0 {
		fmt.Fprintf(w, "\t\tsupported_qp:\n")
		printFlagLines(w, render.QPTNames44(r.SupportedQPTs))
	}
	fmt.Fprintf(w, "\tmax_wq_type_rq:\t\t\t%d\n", d.MaxWQTypeRQ)
	pp := &d.PacketPacingCaps
	fmt.Fprintf(w, "\tpacket_pacing_caps:\n")
	fmt.Fprintf(w, "\t\tqp_rate_limit_min:\t%dkbps\n", pp.QPRateLimitMin)
	fmt.Fprintf(w, "\t\tqp_rate_limit_max:\t%dkbps\n", pp.QPRateLimitMax)
	if pp.QPRateLimitMax != 0 {
		fmt.Fprintf(w, "\t\tsupported_qp:\n")
		printFlagLines(w, render.QPTNames44(pp.SupportedQPTs))
	}
	if tm := &d.TMCaps; tm.MaxNumTags != 0 {
		fmt.Fprintf(w, "\tmax_rndv_hdr_size:\t\t%d\n", tm.MaxRndvHdrSize)
		fmt.Fprintf(w, "\tmax_num_tags:\t\t\t%d\n", tm.MaxNumTags)
		fmt.Fprintf(w, "\tmax_ops:\t\t\t%d\n", tm.MaxOps)
		fmt.Fprintf(w, "\tmax_sge:\t\t\t%d\n", tm.MaxSGE)
		fmt.Fprintf(w, "\tflags:\n")
		if tm.Flags&1 != 0 { // IBV_TM_CAP_RC; no line for other bits
			fmt.Fprintf(w, "\t\t\t\t\tIBV_TM_CAP_RC\n")
		}
	} else {
		fmt.Fprintf(w, "\ttag matching not supported\n")
	}
	if c := &d.CQModerationCaps; c.MaxCQCount != 0 && c.MaxCQPeriod != 0 {
		fmt.Fprintf(w, "\n\tcq moderation caps:\n")
		fmt.Fprintf(w, "\t\tmax_cq_count:\t%d\n", c.MaxCQCount)
		fmt.Fprintf(w, "\t\tmax_cq_period:\t%d us\n\n", c.MaxCQPeriod)
	}
	if d.MaxDMSize != 0 {
		fmt.Fprintf(w, "\tmaximum available device memory:\t%dBytes\n\n", d.MaxDMSize)
	}
	fmt.Fprintf(w, "\tnum_comp_vectors:\t\t%d\n", int32(d.NumCompVectors))
}

// printPortVerbose is what -v prints after a port's link_layer.
func printPortVerbose(w *bufio.Writer, d *render.DevInfo, p *render.DevInfoPort) {
	fmt.Fprintf(w, "\t\t\tmax_msg_sz:\t\t0x%x\n", p.MaxMsgSz)
	fmt.Fprintf(w, "\t\t\tport_cap_flags:\t\t0x%08x\n", p.PortCapFlags)
	fmt.Fprintf(w, "\t\t\tport_cap_flags2:\t0x%04x\n", p.PortCapFlags2)
	fmt.Fprintf(w, "\t\t\tmax_vl_num:\t\t%s (%d)\n", p.MaxVLNumName, p.MaxVLNum)
	fmt.Fprintf(w, "\t\t\tbad_pkey_cntr:\t\t0x%x\n", p.BadPkeyCntr)
	fmt.Fprintf(w, "\t\t\tqkey_viol_cntr:\t\t0x%x\n", p.QkeyViolCntr)
	fmt.Fprintf(w, "\t\t\tsm_sl:\t\t\t%d\n", p.SMSL)
	fmt.Fprintf(w, "\t\t\tpkey_tbl_len:\t\t%d\n", p.PkeyTblLen)
	fmt.Fprintf(w, "\t\t\tgid_tbl_len:\t\t%d\n", int32(p.GIDTblLen))
	fmt.Fprintf(w, "\t\t\tsubnet_timeout:\t\t%d\n", p.SubnetTimeout)
	fmt.Fprintf(w, "\t\t\tinit_type_reply:\t%d\n", p.InitTypeReply)
	// "%sX": an unknown width reads "invalid widthX".
	width := p.ActiveWidthName
	if !strings.HasSuffix(width, "X") {
		width += "X"
	}
	fmt.Fprintf(w, "\t\t\tactive_width:\t\t%s (%d)\n", width, p.ActiveWidth)
	// rdma-core 44 reads the 8-bit active_speed only. The kernel fills it
	// and active_speed_ex from one value, so it is the low byte of either;
	// a speed past 255 (XDR) is "invalid speed" there.
	speed, speedName := uint8(p.ActiveSpeed), p.ActiveSpeedName
	if p.ActiveSpeed > 0xff {
		speedName = "invalid speed"
	}
	fmt.Fprintf(w, "\t\t\tactive_speed:\t\t%s (%d)\n", speedName, speed)
	if d.Transport == 0 { // IBV_TRANSPORT_IB only
		fmt.Fprintf(w, "\t\t\tphys_state:\t\t%s (%d)\n", p.PhysStateName, p.PhysState)
	}
	for _, g := range p.GIDs {
		printGID(w, g, p.LinkLayerName == "Ethernet")
	}
}

// printGID prints one GID as print_formated_gid: a GID whose interface ID
// (last 8 bytes) is zero is skipped; RoCE v2 GIDs as inet_ntop writes them,
// IB and RoCE v1 GIDs as 8 groups of 4 hex digits; on Ethernet ports the
// type follows. A GID of unknown type (libibverbs could not read it)
// prints nothing.
func printGID(w *bufio.Writer, g render.DevInfoGID, ethernet bool) {
	a, err := netip.ParseAddr(g.GID)
	if err != nil {
		return
	}
	b := a.As16()
	if [8]byte(b[8:]) == [8]byte{} {
		return
	}
	suffix := ""
	var text string
	switch g.Type {
	case "":
		return
	case "IB", "RoCE v1":
		suffix = ", RoCE v1"
		var s strings.Builder
		for i := 0; i < 16; i += 2 {
			if i > 0 {
				s.WriteByte(':')
			}
			fmt.Fprintf(&s, "%02x%02x", b[i], b[i+1])
		}
		text = s.String()
	default: // libibverbs takes every other type for RoCE v2
		suffix = ", RoCE v2"
		text = inetNtop6(b)
	}
	if !ethernet {
		suffix = ""
	}
	fmt.Fprintf(w, "\t\t\tGID[%3d]:\t\t%s%s\n", g.Index, text, suffix)
}

// inetNtop6 is glibc's inet_ntop for AF_INET6: netip's form (RFC 5952),
// except that an address whose first 96 bits are zero and whose 7th
// 16-bit word is not reads "::a.b.c.d" (IPv4-compatible) as glibc writes it.
func inetNtop6(b [16]byte) string {
	if [12]byte(b[:12]) == [12]byte{} && (b[12] != 0 || b[13] != 0) {
		return fmt.Sprintf("::%d.%d.%d.%d", b[12], b[13], b[14], b[15])
	}
	return netip.AddrFrom16(b).String()
}
