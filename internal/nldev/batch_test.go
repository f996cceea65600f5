package nldev

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/nlsock"
)

// nlmsg is one netlink message as the kernel sends it.
func nlmsg(typ uint16, seq, pid uint32, body []byte) []byte {
	return nlsock.AppendMessage(nil, typ, 0, seq, pid, body)
}

func errBody(errno int32) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b, uint32(errno))
	return b
}

type answer struct {
	k    int
	port uint32
	err  error
}

func collect(t *testing.T, dgrams [][]byte, first uint32, n int) ([]answer, int) {
	t.Helper()
	var got []answer
	next := 0
	for _, d := range dgrams {
		if err := answers(d, cmdPortGet, 77, first, n, &next, func(k int, b []byte, err error) {
			a := answer{k: k, err: err}
			if err == nil {
				a.port = decodePort(b).Port
			}
			got = append(got, a)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return got, next
}

// TestAnswers: batched answers are matched by sequence number and port
// ID; errors, lost answers, acknowledgements, stale and foreign messages
// each have their place.
func TestAnswers(t *testing.T) {
	port := func(p uint32) []byte {
		var e encoder
		e.u32(attrDevIndex, 0)
		e.u32(attrPortIndex, p)
		return e.b
	}
	typ := msgType(cmdPortGet)
	dgrams := [][]byte{
		nlmsg(typ, 9, 77, port(9)),                  // stale: before first
		nlmsg(typ, 10, 78, port(9)),                 // another socket's
		nlmsg(typ, 10, 77, port(1)),                 // answers request 0
		nlmsg(unix.NLMSG_ERROR, 11, 77, errBody(0)), // an acknowledgement: skipped
		append(nlmsg(unix.NLMSG_ERROR, 11, 77, errBody(-int32(syscall.ENODEV))),
			nlmsg(typ, 11, 77, port(5))...), // request 1 failed; a second answer to it is skipped
		nlmsg(msgType(cmdGet), 13, 77, port(4)), // request 3, typed GET as the kernel answers a PORT_GET; request 2's answer was lost
		nlmsg(typ, 14, 77, port(6)),             // beyond the batch
	}
	got, next := collect(t, dgrams, 10, 4)
	if next != 4 || len(got) != 4 {
		t.Fatalf("next %d, answers %+v", next, got)
	}
	if got[0].k != 0 || got[0].err != nil || got[0].port != 1 {
		t.Errorf("request 0: %+v", got[0])
	}
	var ke *KernelError
	if got[1].k != 1 || !errors.As(got[1].err, &ke) || ke.Errno != syscall.ENODEV || ke.Op != "PORT_GET" {
		t.Errorf("request 1: %+v", got[1])
	}
	if got[2].k != 2 || !errors.Is(got[2].err, errLost) {
		t.Errorf("request 2: %+v", got[2])
	}
	if got[3].k != 3 || got[3].err != nil || got[3].port != 4 {
		t.Errorf("request 3: %+v", got[3])
	}
	// Sequence numbers that wrap around within a batch.
	got, next = collect(t, [][]byte{nlmsg(typ, 0xffffffff, 77, port(1)), nlmsg(typ, 0, 77, port(2))}, 0xffffffff, 2)
	if next != 2 || len(got) != 2 || got[1].port != 2 {
		t.Errorf("wrapped: next %d, %+v", next, got)
	}
	// Framing that runs past the datagram is an error.
	bad := nlmsg(typ, 10, 77, port(1))
	binary.NativeEndian.PutUint32(bad, 4096)
	next = 0
	if err := answers(bad, cmdPortGet, 77, 10, 1, &next, func(int, []byte, error) { t.Error("answer from a malformed datagram") }); err == nil {
		t.Error("malformed datagram: no error")
	}
}

// FuzzAnswers: whatever a datagram holds, every request gets at most one
// answer, in order, and none outside the batch.
func FuzzAnswers(f *testing.F) {
	typ := msgType(cmdPortGet)
	f.Add(nlmsg(typ, 1, 77, portMsg(0, "rxe0", "vrxe0", 1)))
	f.Add(append(nlmsg(unix.NLMSG_ERROR, 1, 77, errBody(-22)), nlmsg(typ, 3, 77, nil)...))
	f.Add([]byte{16, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		next, last := 0, -1
		_ = answers(b, cmdPortGet, 77, 1, 4, &next, func(k int, body []byte, err error) {
			if k != last+1 || k >= 4 {
				t.Fatalf("answer %d after %d", k, last)
			}
			last = k
			if err == nil {
				decodePort(body)
			}
		})
		if next != last+1 {
			t.Fatalf("next %d, last answer %d", next, last)
		}
	})
}

// TestPortsOfEach: one PORT_GET per port over a caller's connection; a
// device whose port count is missing or absurd is dumped instead, and a
// device the kernel refuses gets its error and no ports.
func TestPortsOfEach(t *testing.T) {
	c, f := newFake(twoRxe)
	one, huge := uint32(1), uint32(1<<31)
	ps, errs := c.PortsOfEach([]Device{{Index: 0, NumPorts: &one}, {Index: 1, NumPorts: &huge}, {Index: 1}, {Index: 7, NumPorts: &one}})
	if len(ps[0]) != 1 || ps[0][0].NetdevName != "vrxe0" || errs[0] != nil {
		t.Errorf("rxe0: %+v %v", ps[0], errs[0])
	}
	for i := 1; i <= 2; i++ {
		if len(ps[i]) != 1 || ps[i][0].NetdevName != "vrxe1" || errs[i] != nil {
			t.Errorf("device %d: %+v %v", i, ps[i], errs[i])
		}
	}
	var ke *KernelError
	if ps[3] != nil || !errors.As(errs[3], &ke) || ke.Errno != syscall.EINVAL {
		t.Errorf("unknown device: %+v %v", ps[3], errs[3])
	}
	if len(f.reqs) != 4 {
		t.Errorf("%d requests, want 4 (two dumps, then one per port)", len(f.reqs))
	}
	for i, want := range []uint16{flagRequest | flagDump, flagRequest | flagDump, flagRequest, flagRequest} {
		if i < len(f.reqs) && f.reqs[i].Flags != want {
			t.Errorf("request %d: flags %#x, want %#x", i, f.reqs[i].Flags, want)
		}
	}
}
