package verbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// testContext is a Context whose fd is the write end of a pipe: write()
// commands land in the pipe byte for byte, where the test reads them.
func testContext(t *testing.T) (*Context, int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	c := &Context{fd: p[1], dev: Device{Name: "test0", DriverID: DriverRXE}, asyncFD: -1}
	if err := c.scr.reserve(scratchMin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.release()
		unix.Close(p[0])
	})
	return c, p[0]
}

func readCmd(t *testing.T, fd, n int) []byte {
	t.Helper()
	b := make([]byte, n+64)
	got, err := unix.Read(fd, b)
	if err != nil {
		t.Fatal(err)
	}
	return b[:got]
}

// le builds a little-endian byte string from fixed-size values.
func le(vals ...any) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// respAddr is where the helper put the response: the first allocation
// after the (8-aligned) command in scratch.
func respAddr(c *Context, cmdLen int) uint64 {
	return uint64(uintptr(unsafe.Pointer(&c.scr.mem[0]))) + uint64(pad8(cmdLen))
}

func isLittleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

// TestWriteFraming checks the write() buffers against the word counts rxe
// accepted on kernel 6.1 (drivers/infiniband/core/uverbs_main.c
// verify_hdr) and the bytes of rdma-core's rxe doorbell
// (providers/rxe/rxe.c post_send_db).
func TestWriteFraming(t *testing.T) {
	if !isLittleEndian() {
		t.Skip("byte tables are little-endian") // amd64/arm64 only in practice
	}
	c, r := testContext(t)

	// ALLOC_PD: in_words 4 (8 hdr + 8 req), out_words 1.
	req := uvAllocPD{}
	var resp uvAllocPDResp
	if err := c.rawWrite(cmdAllocPD, rawmem.Of(&req), rawmem.Of(&resp), nil, nil); err != nil {
		t.Fatal(err)
	}
	want := le(uint32(3), uint16(4), uint16(1), respAddr(c, 16))
	if got := readCmd(t, r, 16); !bytes.Equal(got, want) {
		t.Errorf("ALLOC_PD:\n got % x\nwant % x", got, want)
	}

	// DEALLOC_PD: in_words 3, out_words 0, no response field.
	h := uint32(7)
	if err := c.rawWrite(cmdDeallocPD, rawmem.Of(&h), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	want = le(uint32(4), uint16(3), uint16(0), uint32(7))
	if got := readCmd(t, r, 12); !bytes.Equal(got, want) {
		t.Errorf("DEALLOC_PD:\n got % x\nwant % x", got, want)
	}

	// REG_MR: 12 / 3.
	mr := uvRegMR{Start: 0x7f0000001000, Length: 65536, HCAVA: 0x7f0000001000, PDHandle: 0, AccessFlags: 7}
	var mresp uvRegMRResp
	if err := c.rawWrite(cmdRegMR, rawmem.Of(&mr), rawmem.Of(&mresp), nil, nil); err != nil {
		t.Fatal(err)
	}
	want = le(uint32(9), uint16(12), uint16(3), respAddr(c, 48), uint64(0x7f0000001000), uint64(65536), uint64(0x7f0000001000), uint32(0), uint32(7))
	if got := readCmd(t, r, 48); !bytes.Equal(got, want) {
		t.Errorf("REG_MR:\n got % x\nwant % x", got, want)
	}

	// QUERY_PORT: 6 / 10; GET_CONTEXT: 4 / 2; QUERY_DEVICE 4 / 44.
	qp := uvQueryPort{PortNum: 1}
	var qpr uvQueryPortResp
	if err := c.rawWrite(cmdQueryPort, rawmem.Of(&qp), rawmem.Of(&qpr), nil, nil); err != nil {
		t.Fatal(err)
	}
	want = le(uint32(2), uint16(6), uint16(10), respAddr(c, 24), uint8(1), [7]byte{})
	if got := readCmd(t, r, 24); !bytes.Equal(got, want) {
		t.Errorf("QUERY_PORT:\n got % x\nwant % x", got, want)
	}
	gc := uvGetContext{}
	var gcr uvGetContextResp
	if err := c.rawWrite(cmdGetContext, rawmem.Of(&gc), rawmem.Of(&gcr), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := readCmd(t, r, 16); !bytes.Equal(got[:8], le(uint32(0), uint16(4), uint16(2))) {
		t.Errorf("GET_CONTEXT header % x", got[:8])
	}
	qd := uvQueryDevice{}
	var qdr uvQueryDeviceResp
	if err := c.rawWrite(cmdQueryDevice, rawmem.Of(&qd), rawmem.Of(&qdr), nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := readCmd(t, r, 16); !bytes.Equal(got[:8], le(uint32(1), uint16(4), uint16(44))) {
		t.Errorf("QUERY_DEVICE header % x", got[:8])
	}

	// CREATE_CQ with rxe's 16-byte udata out (rxe_create_cq_resp): 10 / 6.
	cq := make([]byte, 32)
	cqr := make([]byte, 8)
	udo := make([]byte, 16)
	if err := c.rawWrite(cmdCreateCQ, cq, cqr, nil, udo); err != nil {
		t.Fatal(err)
	}
	if got := readCmd(t, r, 40); !bytes.Equal(got[:8], le(uint32(18), uint16(10), uint16(6))) || len(got) != 40 {
		t.Errorf("CREATE_CQ header % x (len %d)", got[:8], len(got))
	}

	// The rxe doorbell (rdma-core providers/rxe/rxe.c post_send_db): 32
	// bytes, command 28, 8 / 1, then response, qp_handle, wr_count 0,
	// sge_count 0, wqe_size 128.
	ps := le(uint64(0), uint32(3), uint32(0), uint32(0), uint32(128))
	psr := make([]byte, 4)
	if err := c.rawWrite(cmdPostSend, ps, psr, nil, nil); err != nil {
		t.Fatal(err)
	}
	want = append([]byte{0x1c, 0, 0, 0, 0x08, 0, 0x01, 0}, le(respAddr(c, 32))...)
	want = append(want, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0)
	if got := readCmd(t, r, 32); !bytes.Equal(got, want) {
		t.Errorf("POST_SEND doorbell:\n got % x\nwant % x", got, want)
	}

	// EX QUERY_DEVICE: one 32-byte write, in_words 1, out_words 38
	// (8-byte units, headers excluded), provider words 0.
	eq := uvExQueryDevice{}
	var eqr uvExQueryDeviceResp
	if err := c.rawWriteEx(exCmdQueryDevice, rawmem.Of(&eq), rawmem.Of(&eqr), nil, nil); err != nil {
		t.Fatal(err)
	}
	want = le(uint32(0x80000001), uint16(1), uint16(38), respAddr(c, 32), uint16(0), uint16(0), uint32(0), uint64(0))
	if got := readCmd(t, r, 32); !bytes.Equal(got, want) {
		t.Errorf("EX_QUERY_DEVICE:\n got % x\nwant % x", got, want)
	}

	// Lengths that are not whole words are refused before any syscall.
	if err := c.rawWrite(cmdAllocPD, make([]byte, 6), nil, nil, nil); err == nil {
		t.Error("6-byte request accepted")
	}
}

// TestIoctlFraming checks the RDMA_VERBS_IOCTL buffer (struct
// ib_uverbs_ioctl_hdr and attributes, rdma/rdma_user_ioctl_cmds.h) of
// INVOKE_WRITE ALLOC_PD and DEALLOC_PD as seen working on 6.1, and that
// outputs (ptr-out data, new handles, flags) come back.
func TestIoctlFraming(t *testing.T) {
	if !isLittleEndian() {
		t.Skip("byte tables are little-endian")
	}
	c, _ := testContext(t)
	var seen []byte
	c.sysIoctl = func(fd int, buf []byte) unix.Errno {
		seen = append(seen[:0], buf...)
		// Act as the kernel: write pd_handle 5 to CORE_OUT (attr 2),
		// whose payload is the first one after the 72-byte command.
		binary.LittleEndian.PutUint32(c.scr.mem[72:], 5)
		binary.LittleEndian.PutUint16(buf[24+32+4:], attrFMandatory|attrFValidOutput)
		return 0
	}
	c.useIoctl = true
	req := uvAllocPD{}
	var resp uvAllocPDResp
	if err := c.writeCmd(cmdAllocPD, rawmem.Of(&req), rawmem.Of(&resp), nil, nil); err != nil {
		t.Fatal(err)
	}
	if resp.PDHandle != 5 {
		t.Errorf("pd_handle %d, want 5 from CORE_OUT", resp.PDHandle)
	}
	outPtr := uint64(uintptr(unsafe.Pointer(&c.scr.mem[0]))) + 72 // first payload after hdr+3 attrs
	want := le(
		uint16(72), uint16(0), uint16(0), uint16(3), uint64(0), uint32(DriverRXE), uint32(0), // header
		uint16(2), uint16(8), uint16(1), uint16(0), uint64(cmdAllocPD), // WRITE_CMD const
		uint16(0), uint16(8), uint16(1), uint16(0), uint64(0), // CORE_IN, 8 bytes inline
		uint16(1), uint16(4), uint16(1), uint16(0), outPtr, // CORE_OUT pointer
	)
	if !bytes.Equal(seen, want) {
		t.Errorf("INVOKE_WRITE ALLOC_PD:\n got % x\nwant % x", seen, want)
	}

	// DEALLOC_PD: CORE_IN of 4 bytes inline, data = handle.
	c.sysIoctl = func(fd int, buf []byte) unix.Errno { seen = append(seen[:0], buf...); return 0 }
	h := uint32(0x1234)
	if err := c.writeCmd(cmdDeallocPD, rawmem.Of(&h), nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	want = le(
		uint16(56), uint16(0), uint16(0), uint16(2), uint64(0), uint32(DriverRXE), uint32(0),
		uint16(2), uint16(8), uint16(1), uint16(0), uint64(cmdDeallocPD),
		uint16(0), uint16(4), uint16(1), uint16(0), uint64(0x1234),
	)
	if !bytes.Equal(seen, want) {
		t.Errorf("INVOKE_WRITE DEALLOC_PD:\n got % x\nwant % x", seen, want)
	}

	// QUERY_PORT native: PORT_NUM const 8, RESP ptr-out 48; PD_DESTROY IDR.
	c.sysIoctl = func(fd int, buf []byte) unix.Errno {
		seen = append(seen[:0], buf...)
		binary.LittleEndian.PutUint64(buf[24+8:], 42) // "new handle" written back
		return 0
	}
	attrs := []ioctlAttr{attrNew(0), attrPtrOut(1, make([]byte, 48)).optional()}
	if err := c.ioctl(objPD, 9, attrs); err != nil {
		t.Fatal(err)
	}
	if attrs[0].Value != 42 {
		t.Errorf("new handle %d, want 42", attrs[0].Value)
	}
	if f := binary.LittleEndian.Uint16(seen[24+16+4:]); f != 0 {
		t.Errorf("optional attribute has flags %#x", f)
	}

	// Errors keep the errno and the device name; EIO means the device went away.
	c.sysIoctl = func(int, []byte) unix.Errno { return unix.EIO }
	err := c.ioctl(objDevice, methQueryPort, []ioctlAttr{attrConst(0, 1)})
	if !errors.Is(err, ErrDeviceGone) || !errors.Is(err, unix.EIO) {
		t.Errorf("EIO: got %v", err)
	}
	c.sysIoctl = func(int, []byte) unix.Errno { return unix.EOPNOTSUPP }
	if err := c.ioctl(objDevice, methQueryPort, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("EOPNOTSUPP: got %v", err)
	}
}

// TestClosedContext: every call on a closed context fails cleanly.
func TestClosedContext(t *testing.T) {
	c, _ := testContext(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.QueryDevice(); !errors.Is(err, ErrClosed) {
		t.Errorf("QueryDevice after Close: %v", err)
	}
	if _, err := c.AllocPD(); !errors.Is(err, ErrClosed) {
		t.Errorf("AllocPD after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestBuffer(t *testing.T) {
	b, err := NewBuffer(100)
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != unix.Getpagesize() || b.Addr()%uint64(unix.Getpagesize()) != 0 {
		t.Errorf("len %d addr %#x", b.Len(), b.Addr())
	}
	b.Bytes()[0] = 1
	if err := b.ref(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err == nil {
		t.Error("Close with a registration succeeded")
	}
	b.unref()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := NewBuffer(0); err == nil {
		t.Error("NewBuffer(0) succeeded")
	}
}

func TestErrorsMessages(t *testing.T) {
	me := &MemlockError{Device: "rxe0", Op: "REG_MR", Limit: 64 << 10, Pinned: 0, Need: 1 << 20}
	if !IsPermission(me) || !errors.Is(me, unix.ENOMEM) {
		t.Error("MemlockError is not a permission error / ENOMEM")
	}
	for _, s := range []string{"RLIMIT_MEMLOCK is 64 KiB", "1024 KiB", "ulimit -l"} {
		if !bytes.Contains([]byte(me.Error()), []byte(s)) {
			t.Errorf("memlock message %q lacks %q", me.Error(), s)
		}
	}
	pe := &PermissionError{Device: "rxe0", Path: "/dev/infiniband/uverbs0", Err: unix.EACCES}
	if !IsPermission(pe) || !bytes.Contains([]byte(pe.Error()), []byte("/dev/infiniband/uverbs0")) {
		t.Errorf("permission error: %v", pe)
	}
	if !IsNotFound(&DeviceNotFoundError{Name: "x"}) || !IsNotFound(&PortNotFoundError{Device: "rxe0", Port: 2, Ports: 1}) {
		t.Error("not-found errors")
	}
	if !errors.Is(&NoDataPathError{Device: "efa0", Driver: "efa"}, ErrUnsupported) {
		t.Error("NoDataPathError is not ErrUnsupported")
	}
}

// A closed context's scratch serves the next one, cleared piece by piece.
func TestScratchReuse(t *testing.T) {
	var a scratch
	if err := a.reserve(scratchMin); err != nil {
		t.Fatal(err)
	}
	b := a.alloc(16)
	for i := range b {
		b[i] = 0xff
	}
	first := &a.mem[0]
	a.free()
	var c scratch
	if err := c.reserve(64); err != nil {
		t.Fatal(err)
	}
	defer c.free()
	if &c.mem[0] != first {
		t.Errorf("the freed area was not reused")
	}
	for i, v := range c.alloc(16) {
		if v != 0 {
			t.Fatalf("byte %d of a reused piece is %#x, want 0", i, v)
		}
	}
	// A bigger request than scratchMin maps a new, bigger area.
	var d scratch
	if err := d.reserve(2 * scratchMin); err != nil {
		t.Fatal(err)
	}
	if len(d.mem) != 2*scratchMin {
		t.Errorf("len %d, want %d", len(d.mem), 2*scratchMin)
	}
	d.free()
}

// TestDriverMethodFraming checks the RDMA_VERBS_IOCTL bytes of a driver
// method with one PTR_IN and one PTR_OUT attribute (here mlx5's
// DEVX_OTHER: object and method 1<<UVERBS_ID_NS_SHIFT, attributes 0x1000
// and 0x1001, mlx5_user_ioctl_cmds.h), and that the kernel's answer
// reaches out.
func TestDriverMethodFraming(t *testing.T) {
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
	if err := c.DriverMethod("DEVX_OTHER", 0x1000, 0x1000, 0x1000, 0x1001, in, out); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&c.scr.mem[0])))
	want := le(
		uint16(56), uint16(0x1000), uint16(0x1000), uint16(2), uint64(0), uint32(DriverMLX5), uint32(0),
		uint16(0x1000), uint16(16), uint16(attrFMandatory), uint16(0), base+56,
		uint16(0x1001), uint16(32), uint16(attrFMandatory), uint16(0), base+56+16,
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
}
