package verbs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// DMA handles (UVERBS_OBJECT_DMAH, Linux 6.17; rdma-core's
// ibv_alloc_dmah): the object an MR is registered with to carry PCIe TPH
// steering hints (a CPU id, a memory type, a processing hint). Ids from
// include/uapi/rdma/ib_user_ioctl_cmds.h: enum uverbs_default_objects and
// enum uverbs_methods_dmah.
const (
	objDMAH       uint16 = 17
	methDMAHAlloc uint16 = 0
)

// HasDMAHandles says whether this kernel has DMA handles for this device.
// It calls DMAH_ALLOC without its mandatory handle attribute, which
// allocates nothing: a kernel with the method for this device refuses the
// call for the missing attribute (EINVAL); one without it answers
// EPROTONOSUPPORT, whether the kernel predates the object or the driver
// lacks alloc_dmah (the object then is left out of the device's method
// tree: drivers/infiniband/core/uverbs_std_types_dmah.c, UAPI_DEF_OBJ_NEEDS_FN).
func (c *Context) HasDMAHandles() (bool, error) {
	err := c.ioctl(objDMAH, methDMAHAlloc, nil)
	switch {
	case errors.Is(err, unix.EINVAL):
		return true, nil
	case errors.Is(err, ErrUnsupported):
		return false, nil
	case err == nil:
		// Not possible without the handle attribute; were it to
		// happen the handle went nowhere and closing the context
		// frees it.
		return true, nil
	}
	return false, err
}
