package nlsock

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// pairSock is a blockingSock on one end of a datagram socketpair: the
// test writes datagrams as the kernel would on the other end.
func pairSock(t *testing.T) (*blockingSock, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	tv := unix.NsecToTimeval(50e6)
	if err := unix.SetsockoptTimeval(fds[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	s := &blockingSock{fd: fds[0], buf: make([]byte, RecvBufSize)}
	t.Cleanup(func() { s.Close(); unix.Close(fds[1]) })
	return s, fds[1]
}

func rawMsg(typ uint16, flags uint16, seq uint32, data []byte) []byte {
	b := make([]byte, 16+len(data), align4(16+len(data)))
	binary.NativeEndian.PutUint32(b, uint32(16+len(data)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], flags)
	binary.NativeEndian.PutUint32(b[8:], seq)
	copy(b[16:], data)
	return b[:align4(len(b))]
}

func TestBlockingSockReceivesEachMessageOfADatagram(t *testing.T) {
	s, peer := pairSock(t)
	d := append(rawMsg(0x1401, uint16(netlink.Multi), 7, []byte{1, 2, 3, 4, 5}), rawMsg(0x1401, uint16(netlink.Multi), 7, []byte{9, 9, 9, 9})...)
	if _, err := unix.Write(peer, d); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.Receive()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Header.Sequence != 7 || string(msgs[0].Data) != "\x01\x02\x03\x04\x05" || string(msgs[1].Data) != "\x09\x09\x09\x09" {
		t.Fatalf("got %+v", msgs)
	}
	// The answers own their bytes: the next datagram does not change them.
	if _, err := unix.Write(peer, rawMsg(0x1401, 0, 8, []byte{0, 0, 0, 0, 0, 0, 0, 0})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Receive(); err != nil {
		t.Fatal(err)
	}
	if msgs[0].Data[0] != 1 {
		t.Fatal("a received message shares the receive buffer")
	}
}

// TestBlockingSockTruncatedIsAnError: a datagram longer than the receive
// length (SmallRecv) is an error naming the length, never a cut answer;
// one of exactly SmallRecv bytes is whole.
func TestBlockingSockTruncatedIsAnError(t *testing.T) {
	s, peer := pairSock(t)
	s.buf = make([]byte, SmallRecv)
	whole := rawMsg(0x1401, 0, 1, make([]byte, SmallRecv-16))
	if _, err := unix.Write(peer, whole); err != nil {
		t.Fatal(err)
	}
	if msgs, err := s.Receive(); err != nil || len(msgs) != 1 || len(msgs[0].Data) != SmallRecv-16 {
		t.Fatalf("a datagram of SmallRecv bytes: %d messages, %v", len(msgs), err)
	}
	if _, err := unix.Write(peer, rawMsg(0x1401, 0, 2, make([]byte, SmallRecv))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Receive(); err == nil || err.Error() != "netlink datagram larger than the 7872-byte receive buffer" {
		t.Fatalf("got %v", err)
	}
}

func TestBlockingSockSilentKernelIsADeadline(t *testing.T) {
	s, _ := pairSock(t)
	if _, err := s.Receive(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want os.ErrDeadlineExceeded (SO_RCVTIMEO)", err)
	}
}

func TestSplitDatagramRejectsBadLengths(t *testing.T) {
	good := rawMsg(3, 0, 1, []byte{1, 2, 3, 4})
	for name, b := range map[string][]byte{
		"length below a header": func() []byte { c := append([]byte(nil), good...); binary.NativeEndian.PutUint32(c, 8); return c }(),
		"length past the end":   func() []byte { c := append([]byte(nil), good...); binary.NativeEndian.PutUint32(c, 400); return c }(),
	} {
		if _, err := splitDatagram(b); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if ms, err := splitDatagram(good); err != nil || len(ms) != 1 {
		t.Fatalf("good: %v %v", ms, err)
	}
}

func FuzzSplitDatagram(f *testing.F) {
	f.Add(rawMsg(0x1401, 2, 1, []byte{8, 0, 1, 0, 1, 0, 0, 0}))
	f.Add(append(rawMsg(0x1401, 2, 1, []byte{1}), rawMsg(3, 2, 1, []byte{0, 0, 0, 0})...))
	f.Add([]byte{20, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := splitDatagram(b)
		if err != nil {
			return
		}
		n := 0
		for _, m := range ms {
			if int(m.Header.Length) < 16 || len(m.Data) != int(m.Header.Length)-16 {
				t.Fatalf("message %+v", m.Header)
			}
			n += align4(int(m.Header.Length))
		}
		if n > align4(len(b)) {
			t.Fatalf("messages span %d bytes of %d", n, len(b))
		}
	})
}

// recv reads a datagram without allocating: a dump at 128 devices is
// hundreds of datagrams.
func TestBlockingSockRecvAllocatesNothing(t *testing.T) {
	s, peer := pairSock(t)
	d := rawMsg(0x1401, 0, 1, []byte{1, 2, 3, 4})
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := unix.Write(peer, d); err != nil {
			t.Fatal(err)
		}
		b, err := s.recv()
		if err != nil || len(b) != len(d) {
			t.Fatalf("recv: %d bytes, %v", len(b), err)
		}
	})
	if allocs != 0 {
		t.Errorf("recv allocated %v times per datagram, want 0", allocs)
	}
}
