package nldev

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Seeds: the messages the unit tests build.
func seedMsgs() [][]byte {
	var cm encoder
	cm.u32(attrResCMIDN, 1)
	cm.put(attrResSrcAddr, []byte{10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	var q encoder
	q.u32(attrResLQPN, 1)
	q.u8(attrResType, 1)
	return [][]byte{
		devMsg(0, "rxe0", guidRxe0),
		portMsg(0, "rxe0", "vrxe0", 4),
		resMsg(0, "rxe0", nest(attrResQP, nest(attrResQPEntry, q.b))),
		resMsg(0, "rxe0", nest(attrResCMID, nest(attrResCMIDEntry, cm.b))),
		{},
		{4, 0},
		{255, 255, 1, 0},
	}
}

func FuzzDecodeDevicePort(f *testing.F) {
	for _, s := range seedMsgs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decodeDevice(b)
		if d.Caps != nil {
			DeviceCapNames(*d.Caps)
		}
		if d.NodeType != nil {
			NodeTypeName(*d.NodeType)
		}
		p := decodePort(b)
		if p.Caps != nil {
			PortCapNames(*p.Caps)
		}
		if p.State != nil {
			_ = vocab.PortState(*p.State).String()
			_ = vocab.PhysState(*p.State).String()
		}
	})
}

func FuzzDecodeRes(f *testing.F) {
	for _, s := range seedMsgs() {
		f.Add(uint8(0), s)
	}
	type tbl struct{ table, entry uint16 }
	tbls := []tbl{{attrResQP, attrResQPEntry}, {attrResCQ, attrResCQEntry}, {attrResMR, attrResMREntry},
		{attrResPD, attrResPDEntry}, {attrResCMID, attrResCMIDEntry}, {attrResCtx, attrResCtxEntry}, {attrResSRQ, attrResSRQEntry}}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		tb := tbls[int(which)%len(tbls)]
		// Every decoder on every table: the fields must never panic.
		decodeRes(b, tb.table, tb.entry, func(h ResHead, a attrs) {
			q := decodeQP(h, a)
			if q.Type != nil {
				QPTypeName(*q.Type)
				QPStateName(*q.Type)
				PathMigStateName(*q.Type)
				PollCtxName(*q.Type)
				CMStateName(*q.Type)
				SRQTypeName(*q.Type)
			}
			decodeCQ(h, a)
			decodeMR(h, a)
			decodePD(h, a)
			decodeCMID(h, a)
			decodeCtx(h, a)
			decodeSRQ(h, a)
		})
		decodeSummary(b)
	})
}

func FuzzDecodeStatChardevSys(f *testing.F) {
	for _, s := range seedMsgs() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeStats(b)
		decodeChardev(b)
		decodeSystem(b)
	})
}

// FuzzDecodeNotification: event messages as the notify group delivers
// them; seeds are what 6.12 sent, and the other messages.
func FuzzDecodeNotification(f *testing.F) {
	f.Add(uint16(msgType(cmdMonitor)), registerMsg(2, "mon0"))
	f.Add(uint16(msgType(cmdMonitor)), attachMsg(2, "mon0", 1, 8, "mva"))
	f.Add(uint16(msgType(cmdMonitor)), eventMsg(NotifyNetdevDetach, 2, "mon0", 1))
	f.Add(uint16(msgType(cmdMonitor)), eventMsg(NotifyRename, 2, "fast0", 0))
	for _, s := range seedMsgs() {
		f.Add(uint16(msgType(cmdMonitor)), s)
	}
	f.Fuzz(func(t *testing.T, typ uint16, b []byte) {
		n, err := DecodeNotification(typ, b)
		if err != nil {
			return
		}
		_ = n.Type.String()
		if typ != msgType(cmdMonitor) {
			t.Fatalf("type %#x decoded as an event", typ)
		}
	})
}
