//go:build vmtest

package verbs

import (
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Adapters between the QP tests and the verbs core (context, PD, MR).

type vmMR struct {
	buf        []byte
	base       uint64
	lkey, rkey uint32
}

func (m *vmMR) addr(off int) uint64 { return m.base + uint64(off) }

func vmOpen(t testing.TB, dev string) *Context {
	t.Helper()
	c, err := Open(dev)
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

func vmAllocPD(t testing.TB, c *Context) *PD {
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

func vmRegMR(t testing.TB, c *Context, pd *PD, n int) *vmMR {
	t.Helper()
	buf, err := NewBuffer(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := buf.Close(); err != nil {
			t.Errorf("buffer close: %v", err)
		}
	})
	mr, err := pd.RegMR(buf, AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mr.Close(); err != nil {
			t.Errorf("dereg MR: %v", err)
		}
	})
	return &vmMR{buf: buf.Bytes(), base: buf.Addr(), lkey: mr.LKey, rkey: mr.RKey}
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
