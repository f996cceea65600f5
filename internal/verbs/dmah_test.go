package verbs

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// HasDMAHandles sends DMAH_ALLOC (object 17, method 0) with no
// attributes, and reads the kernel's answer: EINVAL (the missing handle)
// means the method is there, EPROTONOSUPPORT that it is not; anything
// else is an error.
func TestHasDMAHandles(t *testing.T) {
	c, _ := testContext(t)
	c.useIoctl = true
	for _, tc := range []struct {
		errno   unix.Errno
		has     bool
		wantErr bool
	}{
		{unix.EINVAL, true, false},
		{unix.EPROTONOSUPPORT, false, false},
		{unix.EOPNOTSUPP, false, false},
		{unix.EPERM, false, true},
	} {
		var obj, method, nattrs uint16
		c.sysIoctl = func(fd int, buf []byte) unix.Errno {
			// struct ib_uverbs_ioctl_hdr: length, object_id, method_id, num_attrs.
			obj, method, nattrs = binary.NativeEndian.Uint16(buf[2:]), binary.NativeEndian.Uint16(buf[4:]), binary.NativeEndian.Uint16(buf[6:])
			return tc.errno
		}
		has, err := c.HasDMAHandles()
		if has != tc.has || (err != nil) != tc.wantErr {
			t.Errorf("%v: %t, %v; want %t, error %t", tc.errno, has, err, tc.has, tc.wantErr)
		}
		if obj != 17 || method != 0 || nattrs != 0 {
			t.Errorf("%v: object %d method %d with %d attributes, want DMAH_ALLOC (17, 0) with none", tc.errno, obj, method, nattrs)
		}
	}
}
