package mlx5

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// The DEVX general-command path of mlx5 (rdma/mlx5_user_ioctl_cmds.h):
// object MLX5_IB_OBJECT_DEVX, method MLX5_IB_METHOD_DEVX_OTHER, carrying a
// raw PRM command mailbox in and its answer out. internal/mlx5cmd builds
// and decodes the PRM commands; this file only moves bytes, so that
// mlx5cmd can import verbs and not the other way round.

const (
	mlx5IDNSShift = 12 // UVERBS_ID_NS_SHIFT: driver-specific ids start at 1<<12

	mlx5ObjDevX           = 1 << mlx5IDNSShift   // MLX5_IB_OBJECT_DEVX
	mlx5MethDevXOther     = 1 << mlx5IDNSShift   // MLX5_IB_METHOD_DEVX_OTHER
	mlx5AttrDevXOtherIn   = 1 << mlx5IDNSShift   // MLX5_IB_ATTR_DEVX_OTHER_CMD_IN
	mlx5AttrDevXOtherOut  = 1<<mlx5IDNSShift + 1 // MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT
	mlx5AllocUctxDevX     = 1 << 0               // MLX5_IB_ALLOC_UCTX_DEVX
	mlx5DevXMinMailbox    = 16                   // general_obj_in/out_cmd_hdr
	mlx5DevXMaxAttrLength = 0xffff               // ib_uverbs_attr.len is a u16
)

// NotMLX5Error: an mlx5-only operation was asked of another driver's
// device. It wraps ErrUnsupported (exitUnsupported in the CLI).
type NotMLX5Error struct {
	Device string
	Driver string
}

func (e *NotMLX5Error) Error() string {
	drv := e.Driver
	if drv == "" {
		drv = "unknown"
	}
	return fmt.Sprintf("%s is not an mlx5 (ConnectX) device: its driver is %s", e.Device, drv)
}

func (e *NotMLX5Error) Unwrap() error { return verbs.ErrUnsupported }

// DevX is an open mlx5 context that runs PRM commands (mlx5cmd's Runner):
// one from OpenDevX, or an ordinary one (the kernel lets QUERY_HCA_CAP
// through without a DEVX uid).
type DevX struct{ *verbs.Context }

// MLX5DevXOther runs one PRM command (in: the command mailbox, starting
// with the 16-byte general_obj_in_cmd_hdr; out: room for the answer,
// starting with status and syndrome) through DEVX_OTHER. The kernel runs
// only a whitelist of general commands this way (QUERY_HCA_CAP,
// QUERY_VPORT_COUNTER, QUERY_CONG_STATUS, ...; kernel devx.c
// devx_is_general_cmd), and all but QUERY_HCA_CAP need a context opened
// with a DEVX uid (OpenDevX). The PRM status in out is not checked
// here (mlx5cmd does that).
func (c DevX) MLX5DevXOther(in, out []byte) error {
	if d := c.Device(); d.DriverID != verbs.DriverMLX5 {
		return &NotMLX5Error{Device: d.Name, Driver: d.Driver}
	}
	if err := checkMailboxes(in, out); err != nil {
		return err
	}
	return c.DriverMethod("DEVX_OTHER", mlx5ObjDevX, mlx5MethDevXOther, mlx5AttrDevXOtherIn, mlx5AttrDevXOtherOut, in, out)
}

// checkMailboxes refuses a PRM command or answer buffer that cannot be
// one: shorter than the general command header, or longer than an ioctl
// attribute's u16 length.
func checkMailboxes(in, out []byte) error {
	if len(in) < mlx5DevXMinMailbox || len(out) < mlx5DevXMinMailbox || len(in) > mlx5DevXMaxAttrLength || len(out) > mlx5DevXMaxAttrLength {
		return fmt.Errorf("verbs: DEVX command of %d bytes in / %d out: both must be %d..%d bytes", len(in), len(out), mlx5DevXMinMailbox, mlx5DevXMaxAttrLength)
	}
	return nil
}

// mlx5DevXContextUData is the GET_CONTEXT request of OpenDevX: the
// provider's usual request plus MLX5_IB_ALLOC_UCTX_DEVX.
func mlx5DevXContextUData() ([]byte, int) {
	req := &mlx5AllocUcontextReq{
		TotalNumBfregs:      mlx5DefTotBfregs,
		NumLowLatencyBfregs: mlx5DefLowLatency,
		Flags:               mlx5AllocUctxDevX,
		MaxCQEVersion:       mlx5MaxCQEVersion,
		LibCaps:             mlx5LibCap4KUAR,
	}
	return rawmem.Of(req), int(unsafe.Sizeof(mlx5AllocUcontextResp{}))
}

// OpenDevX opens mlx5 device d with a DEVX user context
// (MLX5_IB_ALLOC_UCTX_DEVX), which the kernel gives only to processes with
// CAP_NET_RAW (EPERM otherwise) and which DEVX commands other than
// QUERY_HCA_CAP require. The context is otherwise a normal one (queries,
// data path). It is OpenDevice with a different GET_CONTEXT request;
// GET_CONTEXT goes through write() (tunnelled through INVOKE_WRITE where
// the kernel has it), never the native ioctl method.
func OpenDevX(d verbs.Device) (DevX, error) {
	if d.DriverID != verbs.DriverMLX5 {
		return DevX{}, &NotMLX5Error{Device: d.Name, Driver: d.Driver}
	}
	in, outLen := mlx5DevXContextUData()
	c, err := verbs.OpenDeviceWithUData(d, in, outLen, func(fd int, out []byte) (verbs.ProviderContext, error) {
		pc, err := mlx5OpenContext(fd, out, unix.Getpagesize(), mmapUARs{})
		if err != nil {
			return nil, fmt.Errorf("%s: mlx5 provider: %w", d.Name, err)
		}
		return pc, nil
	})
	// EPERM from GET_CONTEXT, not from opening the node (PermissionError).
	var pe *verbs.PermissionError
	if errors.Is(err, unix.EPERM) && !errors.As(err, &pe) {
		return DevX{}, fmt.Errorf("%w (a DEVX context needs CAP_NET_RAW: run as root or grant the capability)", err)
	}
	return DevX{c}, err
}
