package nldev

import (
	"errors"
	"reflect"
	"syscall"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"

	"github.com/rdmactl/rdmactl/internal/kfeat"
)

// Event messages as Debian's 6.12 sent them for `rdma link add mon0 type
// rxe netdev mva` and `rdma link delete mon1` (attributes in the kernel's
// order: fill_nldev_handle or fill_mon_netdev_association, then
// EVENT_TYPE).
func registerMsg(idx uint32, name string) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	e.u8(attrEventType, uint8(NotifyRegister))
	return e.b
}

func attachMsg(idx uint32, name string, port uint32, ndIdx uint32, nd string) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	e.u32(attrPortIndex, port)
	e.u32(attrNdevIndex, ndIdx)
	e.str(attrNdevName, nd)
	e.u8(attrEventType, uint8(NotifyNetdevAttach))
	return e.b
}

func eventMsg(t NotifyType, idx uint32, name string, port uint32) []byte {
	var e encoder
	e.u32(attrDevIndex, idx)
	e.str(attrDevName, name)
	if port != 0 {
		e.u32(attrPortIndex, port)
	}
	e.u8(attrEventType, uint8(t))
	return e.b
}

func u32p(v uint32) *uint32 { return &v }

func TestDecodeNotification(t *testing.T) {
	mt := msgType(cmdMonitor)
	if mt != 5148 {
		t.Fatalf("event message type %d, want 5148 (what 6.12 sends)", mt)
	}
	for _, c := range []struct {
		name string
		b    []byte
		want Notification
	}{
		{"register", registerMsg(2, "mon0"), Notification{Type: NotifyRegister, DevIndex: 2, DevName: "mon0"}},
		{"attach", attachMsg(2, "mon0", 1, 8, "mva"), Notification{Type: NotifyNetdevAttach, DevIndex: 2, DevName: "mon0", Port: u32p(1), NetdevIndex: u32p(8), NetdevName: "mva"}},
		{"detach", eventMsg(NotifyNetdevDetach, 2, "mon0", 1), Notification{Type: NotifyNetdevDetach, DevIndex: 2, DevName: "mon0", Port: u32p(1)}},
		{"unregister", eventMsg(NotifyUnregister, 2, "mon1", 0), Notification{Type: NotifyUnregister, DevIndex: 2, DevName: "mon1"}},
		{"rename", eventMsg(NotifyRename, 2, "fast0", 0), Notification{Type: NotifyRename, DevIndex: 2, DevName: "fast0"}},
		{"unknown type", eventMsg(9, 3, "x", 0), Notification{Type: 9, DevIndex: 3, DevName: "x"}},
	} {
		got, err := DecodeNotification(mt, c.b)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := DecodeNotification(msgType(cmdGet), registerMsg(0, "rxe0")); err == nil {
		t.Error("a GET answer decoded as an event")
	}
	var noType encoder
	noType.u32(attrDevIndex, 1)
	if _, err := DecodeNotification(mt, noType.b); err == nil {
		t.Error("an event without EVENT_TYPE decoded")
	}
	if _, err := DecodeNotification(mt, []byte{5, 0, 102, 0, 0}); err == nil {
		t.Error("an event without a device index decoded")
	}
	if NotifyNetdevRename.String() != "NETDEV_RENAME" || NotifyType(40).String() != "UNKNOWN(40)" {
		t.Error("NotifyType names")
	}
}

// sysAnswer is SYS_GET's answer: Debian's 6.12 sent netns mode, qkey
// mode, MONITOR_MODE and copy-on-fork; 6.1 has no MONITOR_MODE.
func sysAnswer(monitor *uint8) []byte {
	var e encoder
	e.u8(attrSysNetnsMode, 1)
	e.u8(attrSysPrivQKeyMode, 0)
	if monitor != nil {
		e.u8(attrSysMonitorMode, *monitor)
	}
	e.u8(attrSysCopyOnFork, 1)
	return e.b
}

func TestNotifies(t *testing.T) {
	one, zero := uint8(1), uint8(0)
	for _, c := range []struct {
		name   string
		answer func(req message) ([]message, error)
		want   bool
		detail string
	}{
		{"6.12", func(req message) ([]message, error) { return []message{{Type: req.Type, Data: sysAnswer(&one)}}, nil }, true, "SYS_GET: MONITOR_MODE 1"},
		{"6.1", func(req message) ([]message, error) { return []message{{Type: req.Type, Data: sysAnswer(nil)}}, nil }, false, "SYS_GET has no MONITOR_MODE"},
		{"mode 0", func(req message) ([]message, error) { return []message{{Type: req.Type, Data: sysAnswer(&zero)}}, nil }, false, "SYS_GET: MONITOR_MODE 0"},
		{"no SYS_GET", func(req message) ([]message, error) { return nil, syscall.EINVAL }, false, "SYS_GET: EINVAL"},
	} {
		kfeat.Reset()
		cl, f := newFake(c.answer)
		for i := 0; i < 2; i++ {
			if got := cl.Notifies(); got != c.want {
				t.Errorf("%s: Notifies = %v", c.name, got)
			}
		}
		if len(f.reqs) != 1 || f.reqs[0].Type != msgType(cmdSysGet) {
			t.Errorf("%s: requests %+v, want one SYS_GET (probed once)", c.name, f.reqs)
		}
		if r, _ := kfeat.Lookup(kfeat.NLDEVNotify); r.Detail != c.detail {
			t.Errorf("%s: detail %q, want %q", c.name, r.Detail, c.detail)
		}
	}
	t.Setenv(kfeat.EnvAbsent, kfeat.NLDEVSystem)
	kfeat.Reset()
	t.Cleanup(kfeat.Reset)
	c, f := newFake(func(req message) ([]message, error) { return []message{{Type: req.Type, Data: sysAnswer(&one)}}, nil })
	if c.Notifies() || len(f.reqs) != 0 {
		t.Errorf("nldev_sys forced absent: notify probed (%d requests)", len(f.reqs))
	}
	if st, d := kfeat.State(kfeat.NLDEVNotify); st != "absent" || d != "needs nldev_sys" {
		t.Errorf("state %s %s", st, d)
	}
}

// TestListener: events come in the kernel's order, other messages are
// skipped, ENOBUFS is ErrEventsLost.
func TestListener(t *testing.T) {
	batches := [][]netlink.Message{
		{
			{Header: netlink.Header{Type: netlink.HeaderType(msgType(cmdMonitor))}, Data: registerMsg(2, "mon0")},
			{Header: netlink.Header{Type: netlink.HeaderType(msgType(cmdGet))}, Data: devMsg(2, "mon0", 1)},
			{Header: netlink.Header{Type: netlink.HeaderType(msgType(cmdMonitor))}, Data: attachMsg(2, "mon0", 1, 8, "mva")},
		},
	}
	calls := 0
	l := NewListener(nltest.Dial(func(req []netlink.Message) ([]netlink.Message, error) {
		calls++
		if calls <= len(batches) {
			return batches[calls-1], nil
		}
		return nil, syscall.ENOBUFS
	}))
	defer l.Close()
	got, err := l.Receive()
	if err != nil || len(got) != 2 || got[0].Type != NotifyRegister || got[1].Type != NotifyNetdevAttach || got[1].NetdevName != "mva" {
		t.Fatalf("Receive: %+v %v", got, err)
	}
	if _, err := l.Receive(); !errors.Is(err, ErrEventsLost) {
		t.Errorf("ENOBUFS: %v, want ErrEventsLost", err)
	}
}
