package perf

// InlineDeviceDefault is Params.Inline before the device is known: perftest's
// DEF_INLINE (-1), "what this device does by default" (ResolveInline).
const InlineDeviceDefault = -1

// perftest's inline defaults for latency tests on a device it recognizes
// (perftest_parameters.h, DEF_INLINE_*).
const (
	defInlineWrite  = 220 // RDMA WRITE (and WRITE_IMM)
	defInlineSend   = 236 // SEND over RC/UC
	defInlineSendUD = 188 // SEND over UD (the GRH shares the WQE)
)

// ResolveInline replaces InlineDeviceDefault with perftest's choice for
// this test on this device (ctx_set_max_inline): latency tests of WRITE
// and SEND on a device perftest recognizes go inline up to 220/236/188
// bytes (inline skips the HCA's DMA read of the payload, the point of a
// small-message latency test); everything else, and every device it
// does not know, gets 0. rxe is not on its list, so it runs with 0 as
// ib_write_lat prints ("Max inline data : 0[B]"), while a ConnectX gets
// 220 as ib_write_lat gives it. A user's -I is kept.
func (p *Params) ResolveInline(port PortAttr) {
	if p.Inline == InlineDeviceDefault {
		p.Inline = p.deviceInline(port)
	}
}

// deviceInline is perftest's inline size for this test on this device
// when no -I is given (ctx_set_max_inline's DEF_INLINE branch).
func (p *Params) deviceInline(port PortAttr) int {
	if p.Test != TestLat || !perftestKnowsDevice(port.VendorPartID) {
		return 0
	}
	switch {
	case p.Verb == VerbWrite:
		return defInlineWrite
	case p.Verb == VerbSend && p.Conn == UD:
		return defInlineSendUD
	case p.Verb == VerbSend:
		return defInlineSend
	}
	return 0
}

// perftestKnowsDevice says whether perftest's ib_dev_name gives a device
// with this vendor_part_id a name, for the devices that this data path
// drives: the mlx5 family (Connect-IB, ConnectX-4 and later, their VFs,
// BlueField). Those go through the vendor-independent part-ID switch at
// its end; rxe (part 0) is UNKNOWN there, so no inline. perftest's other
// vendors (Chelsio, Intel, Broadcom, ...) have no data path here.
func perftestKnowsDevice(partID uint32) bool {
	switch partID {
	case 4113, // Connect-IB
		4115, 4116, // ConnectX-4, VF
		4117, 4118, // ConnectX-4 Lx, VF
		4119, 4120, // ConnectX-5, VF
		4121, 4122, // ConnectX-5 Ex, VF
		4123, 4124, // ConnectX-6, VF
		4125,                   // ConnectX-6 Dx
		4126,                   // mlx5 generic VF
		4127,                   // ConnectX-6 Lx
		4129, 4131, 4133, 4135, // ConnectX-7, -8, -9, -10
		41682, 41683, // BlueField
		41686, 41692, 41695: // BlueField-2, -3, -4
		return true
	}
	return false
}

// ResolveInlineAsPerftest is ResolveInline under a perftest test's name
// (Report.AsPerftest), where perftest's ctx_set_max_inline
// (src/perftest_parameters.c) is followed to the letter: on a device it
// does not recognize (rxe) a size other than its default (a user's -I;
// read and atomic tests, which force 0) is dropped with a separator on
// stdout and a note on stderr, which it returns ("" for none).
func (p *Params) ResolveInlineAsPerftest(port PortAttr) (note string) {
	switch {
	case !perftestKnowsDevice(port.VendorPartID):
		if p.Inline != InlineDeviceDefault || p.Verb.isReadLike() {
			note = "Device not recognized to implement inline feature. Disabling it"
		}
		p.Inline = 0
	case p.Verb.isReadLike():
		p.Inline = 0
	case p.Inline == InlineDeviceDefault:
		p.Inline = p.deviceInline(port)
	}
	return note
}
