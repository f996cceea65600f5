package rdmacm

import (
	"encoding/binary"
	"io"
	"testing"
	"unsafe"
)

// TestConnParamCommands checks the bytes CONNECT and ACCEPT write (a pipe
// stands in for the rdma_cm fd): the command header and the connection
// parameters that atomics, READ and an SRQ depend on (responder
// resources, initiator depth, the srq flag), at the offsets of struct
// rdma_ucm_conn_param (TestLayout checks them against the header).
func TestConnParamCommands(t *testing.T) {
	c, r := pipeChannel(t)
	id := &ID{ch: c, Handle: 0x2a, UID: 0x1122334455667788}
	p := ConnParam{QPNum: 0x123456, ResponderResources: 16, InitiatorDepth: 15, RetryCount: 6, RNRRetryCount: 5, SRQ: true}
	var cp connParam
	off := func(f uintptr) int { return int(f) }
	for _, tc := range []struct {
		name   string
		run    func() error
		cmd    uint32
		size   int
		param  int // offset of conn_param in the command struct
		handle int // offset of the id
	}{
		{"CONNECT", func() error { return id.Connect(p) }, cmdConnect, int(unsafe.Sizeof(connect{})),
			off(unsafe.Offsetof(connect{}.ConnParam)), off(unsafe.Offsetof(connect{}.ID))},
		{"ACCEPT", func() error { return id.Accept(p) }, cmdAccept, int(unsafe.Sizeof(accept{})),
			off(unsafe.Offsetof(accept{}.ConnParam)), off(unsafe.Offsetof(accept{}.ID))},
	} {
		if err := tc.run(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b := make([]byte, 8+tc.size)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		le := binary.LittleEndian
		if cmd, in, out := le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]); cmd != tc.cmd || int(in) != tc.size || out != 0 {
			t.Errorf("%s: header cmd %d in %d out %d, want %d %d 0", tc.name, cmd, in, out, tc.cmd, tc.size)
		}
		q := b[8+tc.param:]
		at := func(f uintptr) byte { return q[f] }
		if h := le.Uint32(b[8+tc.handle:]); h != 0x2a {
			t.Errorf("%s: id %#x, want 0x2a", tc.name, h)
		}
		if qpn := le.Uint32(q[unsafe.Offsetof(cp.QPNum):]); qpn != 0x123456 {
			t.Errorf("%s: qp_num %#x", tc.name, qpn)
		}
		got := [6]byte{at(unsafe.Offsetof(cp.SRQ)), at(unsafe.Offsetof(cp.ResponderResources)), at(unsafe.Offsetof(cp.InitiatorDepth)),
			at(unsafe.Offsetof(cp.RetryCount)), at(unsafe.Offsetof(cp.RNRRetryCount)), at(unsafe.Offsetof(cp.Valid))}
		if got != [6]byte{1, 16, 15, 6, 5, 1} {
			t.Errorf("%s: srq, responder_resources, initiator_depth, retry, rnr_retry, valid = %v, want [1 16 15 6 5 1]", tc.name, got)
		}
	}
	// Without an SRQ the flag is 0.
	p.SRQ = false
	if err := id.Connect(p); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8+unsafe.Sizeof(connect{}))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	if v := b[8+unsafe.Offsetof(connect{}.ConnParam)+unsafe.Offsetof(cp.SRQ)]; v != 0 {
		t.Errorf("srq flag %d without an SRQ", v)
	}
}
