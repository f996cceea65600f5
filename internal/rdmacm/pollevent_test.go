package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPollEvent: PollEvent asks the kernel once and does not wait (a
// full pipe stands in for an fd with no event queued: the write fails
// with EAGAIN), and with room it writes one GET_EVENT command. WaitEvent
// with a deadline already passed writes nothing at all (Go's poller
// fails the read first), which is why a non-blocking look needs
// PollEvent.
func TestPollEvent(t *testing.T) {
	c, r := pipeChannel(t)

	if _, err := c.WaitEvent(context.Background(), time.Now()); !errors.Is(err, ErrTimeout) {
		t.Fatalf("WaitEvent with a past deadline: %v, want ErrTimeout", err)
	}
	_, _, _ = c.PollEvent() // with room: one command (its response is not a kernel's)
	b := make([]byte, 8+int(unsafe.Sizeof(getEvent{})))
	if _, err := io.ReadFull(r, b); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if cmd, in, out := le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]); cmd != cmdGetEvent || int(in) != int(unsafe.Sizeof(getEvent{})) || int(out) != eventRespSize {
		t.Fatalf("header cmd %d in %d out %d, want %d %d %d (and WaitEvent wrote nothing before it)", cmd, in, out, cmdGetEvent, unsafe.Sizeof(getEvent{}), eventRespSize)
	}

	// Fill the pipe: no room is EAGAIN, which PollEvent reports as no
	// event, at once.
	fd := int(c.f.Fd())
	if err := unix.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := unix.Write(fd, chunk); err != nil {
			break
		}
	}
	start := time.Now()
	ev, ok, err := c.PollEvent()
	if ok || err != nil || time.Since(start) > time.Second {
		t.Fatalf("no event queued: %+v ok %t err %v after %v; want none, at once", ev, ok, err, time.Since(start))
	}
}
