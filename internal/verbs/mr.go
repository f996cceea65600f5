package verbs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Access are the IB_ACCESS_* flags of a memory region (enum
// ib_uverbs_access_flags). REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE
// (the kernel says EINVAL otherwise: ib_check_mr_access, include/rdma/ib_verbs.h).
type Access uint32

const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
	AccessMWBind       Access = 1 << 4
	AccessZeroBased    Access = 1 << 5
	AccessOnDemand     Access = 1 << 6
	AccessHugeTLB      Access = 1 << 7
	// AccessRelaxedOrder (IB_UVERBS_ACCESS_RELAXED_ORDERING) is the first
	// of the optional flags (bits 20..29: IB_UVERBS_ACCESS_OPTIONAL_*):
	// a device without the feature ignores them, and a kernel that has
	// no optional flags (before 5.9) refuses them, so RegMRRange drops
	// them where the context does not report them supported, as
	// rdma-core's ibv_reg_mr_iova2 (libibverbs/verbs.c).
	AccessRelaxedOrder Access = 1 << 20
	accessOptional     Access = 1<<30 - 1<<20 // bits 20..29

	// AccessAll is what benchmarks register with: local write, remote
	// read and write.
	AccessAll = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
)

// MR is a registered memory region (REG_MR).
type MR struct {
	pd *PD
	// Handle is the kernel handle; LKey and RKey the keys for SGEs and for
	// the peer (equal on rxe).
	Handle, LKey, RKey uint32
	// Addr and Length are the registered range (Addr is also the iova).
	Addr, Length uint64

	buf    *Buffer
	mu     sync.Mutex
	key    uint64
	closed bool
}

// RegMR registers the whole of buf.
func (pd *PD) RegMR(buf *Buffer, access Access) (*MR, error) {
	return pd.RegMRRange(buf, 0, buf.Len(), access)
}

// RegMRRange registers length bytes of buf from offset off, with iova =
// the virtual address. buf cannot be closed while the MR exists.
func (pd *PD) RegMRRange(buf *Buffer, off, length int, access Access) (*MR, error) {
	if off < 0 || length <= 0 || off+length > buf.Len() {
		return nil, fmt.Errorf("verbs: memory region [%d, %d) outside the %d-byte buffer", off, off+length, buf.Len())
	}
	if err := buf.ref(); err != nil {
		return nil, err
	}
	c := pd.ctx
	if !c.OptionalAccess() {
		access &^= accessOptional
	}
	start := buf.Addr() + uint64(off)
	req := uvRegMR{Start: start, Length: uint64(length), HCAVA: start, PDHandle: pd.Handle, AccessFlags: uint32(access)}
	var resp uvRegMRResp
	if err := c.writeCmd(cmdRegMR, rawmem.Of(&req), rawmem.Of(&resp), nil, nil); err != nil {
		buf.unref()
		if errors.Is(err, unix.ENOMEM) {
			if me := memlockError(c.dev.Name, "REG_MR", start, uint64(length)); me != nil {
				return nil, me
			}
		}
		return nil, err
	}
	mr := &MR{pd: pd, Handle: resp.MRHandle, LKey: resp.LKey, RKey: resp.RKey, Addr: start, Length: uint64(length), buf: buf}
	mr.key = c.addChild(mr.Close)
	return mr, nil
}

// PD is the protection domain the MR was registered in.
func (mr *MR) PD() *PD { return mr.pd }

// Close deregisters the MR; then its buffer may be closed. A second Close
// returns nil.
func (mr *MR) Close() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return nil
	}
	c := mr.pd.ctx
	err := c.destroyObject(objMR, methMRDestroy, mr.Handle, cmdDeregMR)
	if err != nil && !errors.Is(err, ErrDeviceGone) && !errors.Is(err, ErrClosed) {
		return err
	}
	mr.closed = true
	mr.buf.unref()
	c.removeChild(mr.key)
	return err
}

// memlockError explains an ENOMEM from pinning when RLIMIT_MEMLOCK is the
// likely cause: the limit is finite, the process lacks CAP_IPC_LOCK, and
// what is pinned plus the request exceeds the limit. Otherwise nil (a real
// out-of-memory).
func memlockError(dev, op string, start, length uint64) *MemlockError {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return nil
	}
	if HasCapIPCLock() {
		return nil
	}
	ps := uint64(unix.Getpagesize())
	need := (start+length+ps-1)/ps*ps - start/ps*ps // whole pages pinned
	pinned := procStatusKB("VmPin") * 1024
	if pinned+need <= rl.Cur {
		return nil
	}
	return &MemlockError{Device: dev, Op: op, Limit: rl.Cur, Pinned: pinned, Need: need}
}

// HasCapIPCLock reads CapEff from /proc/self/status (CAP_IPC_LOCK = 14):
// with it, RLIMIT_MEMLOCK does not bind.
func HasCapIPCLock() bool {
	s := procStatusField("CapEff")
	v, err := strconv.ParseUint(s, 16, 64)
	return err == nil && v&(1<<14) != 0
}

// procStatusKB returns a "NNN kB" field of /proc/self/status in kB.
func procStatusKB(name string) uint64 {
	f := strings.Fields(procStatusField(name))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseUint(f[0], 10, 64)
	return v
}

func procStatusField(name string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
