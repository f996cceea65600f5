package verbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
	"golang.org/x/sys/unix"
)

// TestMLX5DevXOtherFraming checks the RDMA_VERBS_IOCTL bytes of a
// DEVX_OTHER call (ids from mlx5_user_ioctl_cmds.h, checked against the
// header by TestMLX5Layout) and that the kernel's answer reaches out.
func TestMLX5DevXOtherFraming(t *testing.T) {
	c, _ := testContext(t)
	c.dev = Device{Name: "mlx5_0", DriverID: DriverMLX5, Driver: "mlx5"}
	in := make([]byte, 16)
	binary.BigEndian.PutUint16(in, 0x100) // QUERY_HCA_CAP
	out := make([]byte, 32)
	var seen []byte
	c.sysIoctl = func(fd int, buf []byte) unix.Errno {
		seen = append(seen[:0], buf...)
		// The out payload follows the header, two attributes and the
		// 16-byte in payload.
		copy(c.scr.mem[56+16:], "answer")
		return 0
	}
	if err := c.MLX5DevXOther(in, out); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&c.scr.mem[0])))
	want := le(
		uint16(56), uint16(mlx5ObjDevX), uint16(mlx5MethDevXOther), uint16(2), uint64(0), uint32(DriverMLX5), uint32(0),
		uint16(mlx5AttrDevXOtherIn), uint16(16), uint16(attrFMandatory), uint16(0), base+56,
		uint16(mlx5AttrDevXOtherOut), uint16(32), uint16(attrFMandatory), uint16(0), base+56+16,
	)
	if !bytes.Equal(seen[:56], want) {
		t.Errorf("DEVX_OTHER ioctl:\n got % x\nwant % x", seen[:56], want)
	}
	if !bytes.Equal(c.scr.mem[56:72], in) {
		t.Errorf("in payload % x", c.scr.mem[56:72])
	}
	if string(out[:6]) != "answer" {
		t.Errorf("out %q: the kernel's answer was not copied back", out[:6])
	}
	if err := c.MLX5DevXOther(in[:8], out); err == nil {
		t.Error("8-byte mailbox accepted")
	}
	c.dev = Device{Name: "rxe0", DriverID: DriverRXE, Driver: "rxe"}
	err := c.MLX5DevXOther(in, out)
	var nm *NotMLX5Error
	if !errors.As(err, &nm) || !errors.Is(err, ErrUnsupported) || err.Error() != "rxe0 is not an mlx5 (ConnectX) device: its driver is rxe" {
		t.Errorf("on rxe: %v", err)
	}
	if _, err := OpenMLX5DevX(Device{Name: "rxe0", DriverID: DriverRXE, Driver: "rxe"}); !errors.As(err, &nm) {
		t.Errorf("OpenMLX5DevX on rxe: %v", err)
	}
}

// TestMLX5ProviderSelected: the provider is found by the driver id NLDEV
// reports (RDMA_DRIVER_MLX5 = 1, checked against the header in
// TestMLX5Layout), and its DEVX request differs only in the flag.
func TestMLX5ProviderSelected(t *testing.T) {
	p, ok := providers[DriverMLX5]
	if !ok || p.Name() != "mlx5" {
		t.Fatalf("providers[%d] = %v", DriverMLX5, p)
	}
	a, _ := p.ContextUData()
	b, _ := mlx5DevXContextUData()
	var ra, rb mlx5AllocUcontextReq
	copy(rawmem.Of(&ra), a)
	copy(rawmem.Of(&rb), b)
	if rb.Flags != mlx5AllocUctxDevX || ra.Flags != 0 {
		t.Errorf("flags %d / %d", ra.Flags, rb.Flags)
	}
	rb.Flags = 0
	if ra != rb {
		t.Errorf("DEVX request %+v differs from %+v beyond the flag", rb, ra)
	}
}
