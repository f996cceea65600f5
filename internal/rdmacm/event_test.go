package rdmacm

import (
	"encoding/binary"
	"strings"
	"testing"
	"unsafe"
)

// rawEvent builds an rdma_ucm_event_resp as the kernel writes it.
func rawEvent(uid uint64, id uint32, typ EventType, status int32, priv []byte, rr, id8 uint8) []byte {
	var r eventResp
	r.UID, r.ID, r.Event, r.Status = uid, id, uint32(typ), uint32(status)
	var cp connParam
	cp.QPNum, cp.QKey = 0x1234, 0x11111111
	copy(cp.PrivateData[:], priv)
	cp.PrivateDataLen = uint8(len(priv))
	cp.ResponderResources, cp.InitiatorDepth, cp.RetryCount, cp.RNRRetryCount = rr, id8, 7, 7
	copy(r.Param[:], unsafe.Slice((*byte)(unsafe.Pointer(&cp)), unsafe.Sizeof(cp)))
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r))...)
}

func TestDecodeEvent(t *testing.T) {
	b := rawEvent(77, 3, EventConnectRequest, 0, []byte("hello"), 16, 8)
	ev, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	if ev.UID != 77 || ev.ID != 3 || ev.Type != EventConnectRequest || ev.Status != 0 {
		t.Fatalf("header: %+v", ev)
	}
	c := ev.Conn
	if c.QPNum != 0x1234 || c.QKey != 0x11111111 || string(c.PrivateData) != "hello" ||
		c.ResponderResources != 16 || c.InitiatorDepth != 8 || c.RetryCount != 7 || c.RNRRetryCount != 7 {
		t.Fatalf("conn: %+v", c)
	}
	if ev.Err() != nil {
		t.Fatalf("Err() = %v for a request", ev.Err())
	}
	// An older kernel's shorter record (no reserved word, no ECE) decodes.
	if _, err := DecodeEvent(b[:minEventSize]); err != nil {
		t.Fatalf("short record: %v", err)
	}
}

func TestDecodeEventRejects(t *testing.T) {
	good := rawEvent(1, 1, EventEstablished, 0, nil, 0, 0)
	cases := map[string][]byte{
		"short":        good[:minEventSize-1],
		"unknown type": rawEvent(1, 1, EventType(99), 0, nil, 0, 0),
	}
	bad := append([]byte(nil), good...)
	bad[20+8+maxPrivateData] = 0xff // private_data_len 255 is fine...
	if _, err := DecodeEvent(bad); err != nil {
		t.Fatalf("255 bytes of private data: %v", err)
	}
	for name, b := range cases {
		if _, err := DecodeEvent(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestEventErr(t *testing.T) {
	for _, c := range []struct {
		ev   Event
		want string
	}{
		{Event{Type: EventRejected, Status: 8}, "nothing listens"},
		{Event{Type: EventRejected, Status: 28}, "refused by the peer"},
		{Event{Type: EventAddrError, Status: -110}, "ADDR_ERROR: connection timed out"},
		{Event{Type: EventUnreachable, Status: -110}, "UNREACHABLE"},
		{Event{Type: EventAddrResolved, Status: -19}, "ADDR_RESOLVED: no such device"},
	} {
		err := c.ev.Err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ev, err, c.want)
		}
	}
}

// FuzzDecodeEvent: whatever the kernel (or a corrupted buffer) writes, the
// decoder returns an event or an error, never panics, and a decoded
// event's private data is what the record says.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(rawEvent(77, 3, EventConnectRequest, 0, []byte("hello"), 16, 8))
	f.Add(rawEvent(1, 1, EventRejected, 8, nil, 0, 0))
	f.Add(rawEvent(1, 2, EventDisconnected, 0, nil, 0, 0)[:minEventSize])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeEvent(b)
		if err != nil {
			return
		}
		n := int(b[20+8+maxPrivateData])
		if len(ev.Conn.PrivateData) != n {
			t.Fatalf("private data %d bytes, record says %d", len(ev.Conn.PrivateData), n)
		}
		if ev.Type > EventTimewaitExit {
			t.Fatalf("type %d accepted", ev.Type)
		}
		if ev.ID != binary.LittleEndian.Uint32(b[8:]) {
			t.Fatal("id")
		}
		_ = ev.Err()
	})
}
