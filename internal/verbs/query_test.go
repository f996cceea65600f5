package verbs

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// TestFillExResponseLength: a kernel that fills less of EX QUERY_DEVICE
// (or of mlx5's provider part) than the header declares leaves the fields
// past response_length absent, even when the buffer holds bytes there.
func TestFillExResponseLength(t *testing.T) {
	full := uvExQueryDeviceResp{
		ODPCaps: uvODPCaps{GeneralCaps: 1, RCODPCaps: 2}, TimestampMask: 3, HCACoreClock: 4,
		DeviceCapFlagsEx: 5, RSSCaps: uvRSSCaps{SupportedQPTs: 6}, MaxWQTypeRQ: 7, RawPacketCaps: 8,
		TMCaps: uvTMCaps{MaxNumTags: 9}, MaxDMSize: 10, XRCODPCaps: 11,
	}
	full.ResponseLength = uint32(unsafe.Sizeof(full))
	var a DeviceAttr
	a.fillEx(&full)
	if a.ODPGeneralCaps != 1 || a.ODPRCCaps != 2 || a.TimestampMask != 3 || a.HCACoreClock != 4 || a.DeviceCapFlagsEx != 5 ||
		a.RSSSupportedQPTs != 6 || a.MaxWQTypeRQ != 7 || a.RawPacketCaps != 8 || a.TMMaxNumTags != 9 ||
		a.MaxDMSize != 10 || a.XRCODPCaps != 11 {
		t.Errorf("full response: %+v", a)
	}
	// A 4.x-era answer: up to and including raw_packet_caps.
	short := full
	short.ResponseLength = uint32(unsafe.Offsetof(full.RawPacketCaps) + 4)
	a = DeviceAttr{}
	a.fillEx(&short)
	if a.RawPacketCaps != 8 || a.MaxWQTypeRQ != 7 || a.TMMaxNumTags != 0 || a.MaxDMSize != 0 || a.XRCODPCaps != 0 {
		t.Errorf("response of %d bytes: raw_packet_caps %d, max_wq_type_rq %d, tm max_num_tags %d, max_dm_size %d, xrc_odp_caps %d",
			short.ResponseLength, a.RawPacketCaps, a.MaxWQTypeRQ, a.TMMaxNumTags, a.MaxDMSize, a.XRCODPCaps)
	}
	if a.ResponseLength != short.ResponseLength || !a.Extended {
		t.Errorf("ResponseLength %d Extended %v", a.ResponseLength, a.Extended)
	}
}

// TestGIDTableSysfs: the fallback for kernels without QUERY_GID_TABLE
// (before 5.10) reads the captured rxe tree's populated slots as the
// ioctl answers them: port, index, GID, type and the netdev's ifindex;
// a slot whose type cannot be read is left out, as an empty one.
func TestGIDTableSysfs(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("../sysfs/testdata/rxe")); err != nil {
		t.Fatal(err)
	}
	gid := func(s string) [16]byte { return netip.MustParseAddr(s).As16() }
	want := []GIDEntry{
		{Port: 1, Index: 0, GID: gid("fe80::479:3cff:fee4:2f19"), Type: vocab.GIDTypeRoCEv2, NetdevIfindex: 4},
		{Port: 1, Index: 1, GID: gid("::ffff:10.77.0.1"), Type: vocab.GIDTypeRoCEv2, NetdevIfindex: 4},
	}
	got, err := gidTableSysfs(sysfs.New(root), "rxe0")
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v\nwant %+v", got, err, want)
	}
	if err := os.Remove(filepath.Join(root, "class/infiniband/rxe0/ports/1/gid_attrs/types/1")); err != nil {
		t.Fatal(err)
	}
	if got, err = gidTableSysfs(sysfs.New(root), "rxe0"); err != nil || !reflect.DeepEqual(got, want[:1]) {
		t.Errorf("without types/1: got %+v, %v\nwant %+v", got, err, want[:1])
	}
	if _, err := gidTableSysfs(sysfs.New(root), "rxe9"); err == nil {
		t.Error("rxe9: no error")
	}
}
