package verbs

import (
	"encoding/binary"
	"testing"
)

// asyncDesc is a struct ib_uverbs_async_event_desc as read() returns it.
func asyncDesc(element uint64, typ uint32) []byte {
	b := make([]byte, asyncEventDescSize)
	binary.NativeEndian.PutUint64(b, element)
	binary.NativeEndian.PutUint32(b[8:], typ)
	return b
}

func TestDecodeAsyncEvent(t *testing.T) {
	ev, err := decodeAsyncEvent(asyncDesc(1, 10))
	if err != nil || ev != (AsyncEvent{Element: 1, Type: EventPortErr}) || ev.Type.String() != "PORT_ERR" || !ev.Type.IsPortEvent() {
		t.Fatalf("PORT_ERR on port 1: %+v %v", ev, err)
	}
	if ev, _ := decodeAsyncEvent(asyncDesc(0x1234, 1)); ev.Type != EventQPFatal || ev.Type.IsPortEvent() || ev.Element != 0x1234 {
		t.Fatalf("QP_FATAL: %+v", ev)
	}
	if s := AsyncEventType(99).String(); s != "event 99" {
		t.Fatalf("unknown type: %q", s)
	}
	if _, err := decodeAsyncEvent(make([]byte, 8)); err == nil {
		t.Fatal("a short descriptor decoded")
	}
}

// The descriptor comes from the kernel: any bytes decode or fail, never
// panic, and a whole descriptor keeps its fields.
func FuzzDecodeAsyncEvent(f *testing.F) {
	f.Add(asyncDesc(1, 10))
	f.Add(asyncDesc(0, 8))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := decodeAsyncEvent(b)
		if len(b) == asyncEventDescSize && (err != nil || ev.Element != binary.NativeEndian.Uint64(b)) {
			t.Fatalf("%x -> %+v %v", b, ev, err)
		}
		_ = ev.Type.String()
	})
}
