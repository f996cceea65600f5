package rdmacm

import (
	"encoding/binary"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"
	"unsafe"
)

// TestOptionConstants checks SET_OPTION's command, level and names
// against <rdma/rdma_user_cm.h> (enums, which layout.c cannot print as
// sizes).
func TestOptionConstants(t *testing.T) {
	h, err := os.ReadFile("/usr/include/rdma/rdma_user_cm.h")
	if err != nil {
		t.Fatalf("the UAPI headers are needed (Debian: linux-libc-dev): %v", err)
	}
	for name, want := range map[string]int{
		"RDMA_OPTION_ID":             optLevelID,
		"RDMA_OPTION_ID_TOS":         optIDTOS,
		"RDMA_OPTION_ID_ACK_TIMEOUT": optIDAckTimeout,
	} {
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*(\d+)`).FindSubmatch(h)
		if m == nil {
			t.Errorf("%s not found in rdma_user_cm.h", name)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != want {
			t.Errorf("%s = %d in the header, %d here", name, got, want)
		}
	}
	// RDMA_USER_CM_CMD_SET_OPTION: the enum counts from CREATE_ID 0.
	body := regexp.MustCompile(`(?s)enum\s*\{\s*(RDMA_USER_CM_CMD_CREATE_ID.*?)\}`).FindSubmatch(h)
	if body == nil {
		t.Fatal("command enum not found")
	}
	cmds := regexp.MustCompile(`RDMA_USER_CM_CMD_(\w+)`).FindAllSubmatch(body[1], -1)
	found := false
	for i, c := range cmds {
		if string(c[1]) == "SET_OPTION" {
			found = true
			if i != cmdSetOption {
				t.Errorf("SET_OPTION is command %d in the header, %d here", i, cmdSetOption)
			}
		}
	}
	if !found {
		t.Error("RDMA_USER_CM_CMD_SET_OPTION not found in the command enum")
	}
}

// TestSetOptionCommand checks the bytes SET_OPTION writes (a pipe stands
// in for the rdma_cm fd): the header, the struct, and an optval address
// that holds the one-byte value.
func TestSetOptionCommand(t *testing.T) {
	c, r := pipeChannel(t)
	mem := c.mem
	id := &ID{ch: c, Handle: 0x1234}
	for _, tc := range []struct {
		set  func() error
		name uint32
		val  byte
	}{
		{func() error { return id.SetTOS(106) }, 0, 106},
		{func() error { return id.SetAckTimeout(18) }, 3, 18},
	} {
		if err := tc.set(); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 8+24)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		if cmd, in, out := le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]); cmd != 14 || in != 24 || out != 0 {
			t.Errorf("header cmd %d in %d out %d, want 14 24 0", cmd, in, out)
		}
		ptr, idh, lvl, name, n := le.Uint64(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:]), le.Uint32(b[24:]), le.Uint32(b[28:])
		if idh != 0x1234 || lvl != 0 || name != tc.name || n != 1 {
			t.Errorf("set_option id %#x level %d optname %d optlen %d, want 0x1234 0 %d 1", idh, lvl, name, n, tc.name)
		}
		base := uint64(uintptr(unsafe.Pointer(&mem[0])))
		if ptr < base || ptr >= base+memSize || mem[ptr-base] != tc.val {
			t.Errorf("optval %#x does not point at %d in the command buffer", ptr, tc.val)
		}
	}
}
