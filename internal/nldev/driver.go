package nldev

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Driver details (rdma -dd): a resource entry may carry
// RDMA_NLDEV_ATTR_DRIVER, a nested table a driver fills through
// rdma_nl_put_driver_* (the kernel's ib_device_ops.fill_res_*_entry; mlx5,
// hns, cxgb4, bnxt_re have them, rxe and siw do not). The table is flat,
// not one nest per entry: a DRIVER_STRING key, an optional
// DRIVER_PRINT_TYPE u8 (1 = hex), then one value attribute, repeated.
// iproute2's print_driver_table reads it the same way and stops at the
// first item out of place; so does decodeDriver, keeping what came before.

// Driver attribute types (enum rdma_nldev_attr).
const (
	attrPad             = 0  // RDMA_NLDEV_ATTR_PAD, before a u64 where alignment needs it
	attrDriver          = 52 // nested table
	attrDriverString    = 54 // string: a key, or a string value
	attrDriverPrintType = 55 // u8: RDMA_NLDEV_PRINT_TYPE_*
	attrDriverS32       = 56
	attrDriverU32       = 57
	attrDriverS64       = 58
	attrDriverU64       = 59
	attrDriverDetails   = 97 // u8 in a request: also list the driver's own objects (6.9+)
	attrResSubtype      = 98 // string: a driver QP's subtype (type DRIVER)
)

// DriverKind is the value type of a driver attribute.
type DriverKind uint8

// The value types of RDMA_NLDEV_ATTR_DRIVER_*.
const (
	DriverString DriverKind = iota
	DriverS32
	DriverU32
	DriverS64
	DriverU64
)

// DriverAttr is one driver-specific fact about a resource: its key as the
// driver names it ("sq_wqe_cnt"), and a string, signed or unsigned value.
type DriverAttr struct {
	Key  string
	Kind DriverKind
	Hex  bool // RDMA_NLDEV_PRINT_TYPE_HEX: the driver asks for 0x%x
	Str  string
	Int  int64  // DriverS32, DriverS64
	Uint uint64 // DriverU32, DriverU64
}

// Value is the attribute as a JSON value: a string or a number (exact;
// rdma -dd -j squeezes every number through an int).
func (d DriverAttr) Value() any {
	switch d.Kind {
	case DriverString:
		return d.Str
	case DriverS32, DriverS64:
		return d.Int
	}
	return d.Uint
}

// Text is the value as rdma -dd prints it: decimal, or 0x%x when the
// driver asked for hex (a negative s32 in hex is its 32-bit pattern).
func (d DriverAttr) Text() string {
	switch d.Kind {
	case DriverString:
		return d.Str
	case DriverS32:
		if d.Hex {
			return fmt.Sprintf("0x%x", uint32(int32(d.Int)))
		}
		return strconv.FormatInt(d.Int, 10)
	case DriverS64:
		if d.Hex {
			return fmt.Sprintf("0x%x", uint64(d.Int))
		}
		return strconv.FormatInt(d.Int, 10)
	}
	if d.Hex {
		return fmt.Sprintf("0x%x", d.Uint)
	}
	return strconv.FormatUint(d.Uint, 10)
}

// decodeDriver reads the DRIVER table of one resource entry; nil when the
// entry has none.
func decodeDriver(e attrs) []DriverAttr {
	tbl, ok := e.get(attrDriver)
	if !ok {
		return nil
	}
	var out []DriverAttr
	var key *string
	hex := false
	for _, a := range parseAttrs(tbl).list {
		if a.typ == attrPad {
			continue
		}
		if key == nil {
			if a.typ != attrDriverString {
				break
			}
			k := cstr(a.data)
			key = &k
			continue
		}
		d := DriverAttr{Key: *key, Hex: hex}
		switch {
		case a.typ == attrDriverPrintType && len(a.data) == 1:
			hex = a.data[0] == 1
			continue
		case a.typ == attrDriverString:
			d.Kind, d.Str = DriverString, cstr(a.data)
		case a.typ == attrDriverS32 && len(a.data) == 4:
			d.Kind, d.Int = DriverS32, int64(int32(binary.NativeEndian.Uint32(a.data)))
		case a.typ == attrDriverU32 && len(a.data) == 4:
			d.Kind, d.Uint = DriverU32, uint64(binary.NativeEndian.Uint32(a.data))
		case a.typ == attrDriverS64 && len(a.data) == 8:
			d.Kind, d.Int = DriverS64, int64(binary.NativeEndian.Uint64(a.data))
		case a.typ == attrDriverU64 && len(a.data) == 8:
			d.Kind, d.Uint = DriverU64, binary.NativeEndian.Uint64(a.data)
		default:
			return out // out of place: stop, as rdma does
		}
		out = append(out, d)
		key, hex = nil, false
	}
	return out
}

// cstr is a NUL-terminated string attribute's text.
func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
