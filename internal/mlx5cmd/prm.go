// Package mlx5cmd builds and decodes mlx5 PRM (Programmer's Reference
// Manual) commands and sends them to a ConnectX through the kernel's DEVX
// general-command path (MLX5_IB_METHOD_DEVX_OTHER), for facts uverbs does
// not report: the HCA capability pages, vport and queue counters, and the
// congestion-control status.
//
// Layouts are the kernel's mlx5 interface definitions
// (include/linux/mlx5/mlx5_ifc.h): every structure is a sequence of
// big-endian bit fields, numbered from the most significant bit of the
// first byte, as MLX5_GET/MLX5_SET read them. prm_test.go lists every
// field offset used here with the ifc structure it comes from.
//
// The encoders and decoders are pure functions over byte slices; the one
// side effect, the ioctl, goes through a Runner (verbs.Context implements
// it), so this package imports nothing of the kernel interface and
// internal/verbs does not import it.
package mlx5cmd

import (
	"encoding/binary"
	"fmt"
)

// Runner runs one PRM command: in is the command mailbox, out receives the
// answer (status, syndrome, then the output structure).
// mlx5.DevX (internal/verbs/provider/mlx5) implements it.
type Runner interface {
	MLX5DevXOther(in, out []byte) error
}

// Field is a bit field of a PRM structure: Off and Width in bits, from
// the most significant bit of byte 0.
type Field struct {
	Name  string
	Off   uint32
	Width uint32
}

// get reads field f of b (MLX5_GET / MLX5_GET64 semantics); widths up to
// 64 bits, never crossing a 32-bit word unless 32-bit aligned.
func get(b []byte, off, width uint32) uint64 {
	if width > 32 {
		hi := get(b, off, width-32)
		lo := get(b, off+width-32, 32)
		return hi<<32 | lo
	}
	dw := off / 32 * 4
	if int(dw)+4 > len(b) {
		return 0
	}
	v := binary.BigEndian.Uint32(b[dw:])
	shift := 32 - off%32 - width
	var mask uint32 = 0xffffffff
	if width < 32 {
		mask = 1<<width - 1
	}
	return uint64(v>>shift) & uint64(mask)
}

// set writes v into the field (MLX5_SET semantics, 32-bit fields or less).
func set(b []byte, off, width uint32, v uint32) {
	dw := off / 32 * 4
	shift := 32 - off%32 - width
	var mask uint32 = 0xffffffff
	if width < 32 {
		mask = 1<<width - 1
	}
	w := binary.BigEndian.Uint32(b[dw:])
	w = w&^(mask<<shift) | (v&mask)<<shift
	binary.BigEndian.PutUint32(b[dw:], w)
}

// Opcodes (mlx5_ifc.h MLX5_CMD_OP_*).
const (
	OpQueryHCACap       = 0x100
	OpQueryVportCounter = 0x770
	OpQueryQCounter     = 0x773
	OpQueryCongStatus   = 0x822
)

// Every command starts with opcode[0x10] at bit 0 and op_mod[0x10] at bit
// 0x30 (general_obj_in_cmd_hdr); every answer with status[0x8] at bit 0
// and syndrome[0x20] at bit 0x20 (…_out_bits).
const (
	hdrOpcodeOff = 0x00
	hdrOpModOff  = 0x30
	outStatusOff = 0x00
	outSyndOff   = 0x20
	outHdrBytes  = 16 // status, syndrome, reserved_at_40[0x40]
)

func newIn(bytes int, opcode, opMod uint32) []byte {
	in := make([]byte, bytes)
	set(in, hdrOpcodeOff, 16, opcode)
	set(in, hdrOpModOff, 16, opMod)
	return in
}

// StatusError is a PRM command the device answered with a non-zero
// status.
type StatusError struct {
	Opcode   uint16
	Status   uint8
	Syndrome uint32
}

// PRM command status values (mlx5 driver's MLX5_CMD_STAT_*).
var statusNames = map[uint8]string{
	0x01: "internal error",
	0x02: "bad operation",
	0x03: "bad parameter",
	0x04: "bad system state",
	0x05: "bad resource",
	0x06: "resource busy",
	0x08: "limits exceeded",
	0x09: "bad resource state",
	0x0a: "bad index",
	0x0f: "no resources",
	0x10: "bad QP state",
	0x30: "bad packet",
	0x40: "bad size of outstanding CQEs",
	0x50: "bad input length",
	0x51: "bad output length",
}

func (e *StatusError) Error() string {
	name := statusNames[e.Status]
	if name == "" {
		name = "unknown status"
	}
	return fmt.Sprintf("mlx5 command %#x failed: %s (status %#x, syndrome %#x)", e.Opcode, name, e.Status, e.Syndrome)
}

// checkOut returns the device's status of an answer as an error.
func checkOut(opcode uint16, out []byte) error {
	if len(out) < outHdrBytes {
		return fmt.Errorf("mlx5 command %#x: answer of %d bytes, shorter than its header", opcode, len(out))
	}
	if st := uint8(get(out, outStatusOff, 8)); st != 0 {
		return &StatusError{Opcode: opcode, Status: st, Syndrome: uint32(get(out, outSyndOff, 32))}
	}
	return nil
}

// run sends in, checks the status and returns out.
func run(r Runner, opcode uint16, in []byte, outLen int) ([]byte, error) {
	out := make([]byte, outLen)
	if err := r.MLX5DevXOther(in, out); err != nil {
		return nil, err
	}
	if err := checkOut(opcode, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Value is one decoded field.
type Value struct {
	Name  string
	Value uint64
}

func decode(b []byte, base uint32, fields []Field) []Value {
	vs := make([]Value, len(fields))
	for i, f := range fields {
		vs[i] = Value{Name: f.Name, Value: get(b, base+f.Off, f.Width)}
	}
	return vs
}
