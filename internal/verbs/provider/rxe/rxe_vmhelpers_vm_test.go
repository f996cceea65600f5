//go:build vmtest

package rxe

import (
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// Adapters between the QP tests and the verbs core (context, PD, MR).

type vmMR struct {
	buf        []byte
	base       uint64
	lkey, rkey uint32
}

func (m *vmMR) addr(off int) uint64 { return m.base + uint64(off) }

func vmOpen(t testing.TB, dev string) *verbs.Context {
	t.Helper()
	c, err := openDevice(dev)
	if err != nil {
		t.Fatalf("open %s: %v", dev, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("%s: close: %v", dev, err)
		}
	})
	return c
}

func vmAllocPD(t testing.TB, c *verbs.Context) *verbs.PD {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pd.Close(); err != nil {
			t.Errorf("dealloc PD: %v", err)
		}
	})
	return pd
}

// vmRegMR registers n bytes of fresh memory in pd with every access right.
func vmRegMR(t testing.TB, c *verbs.Context, pd *verbs.PD, n int) *vmMR {
	t.Helper()
	return vmRegMRAccess(t, pd, n, verbs.AccessAll)
}

// vmGID reads GID index idx of port 1 from sysfs, the reference for what
// the kernel's GID table holds.
func vmGID(t testing.TB, dev string, idx int) [16]byte {
	t.Helper()
	b, err := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/gids/" + strconv.Itoa(idx))
	if err != nil {
		t.Fatal(err)
	}
	h, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSpace(string(b)), ":", ""))
	if err != nil || len(h) != 16 {
		t.Fatalf("GID %q: %v", b, err)
	}
	var g [16]byte
	copy(g[:], h)
	return g
}

// providers is what the VM tests find devices with: this provider alone
// (the list in internal/verbs/provider imports this package).
var providers = verbs.Providers{Provider{}}

// openDevice opens IB device name ("rxe0") and creates its user context.
func openDevice(name string) (*verbs.Context, error) {
	d, err := providers.LookupDevice(name)
	if err != nil {
		return nil, err
	}
	return verbs.OpenDevice(d, verbs.Options{})
}
