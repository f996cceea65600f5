package verbs

import (
	"errors"
	"strings"
	"testing"
)

// NewHugeBuffer maps whole huge pages when the system has them free, and
// otherwise says so as the system's lack (ErrUnsupported), naming the
// sysctl that reserves them.
func TestNewHugeBuffer(t *testing.T) {
	hp, free := hugePageInfo()
	b, err := NewHugeBuffer(3 << 20)
	need := 0
	if hp > 0 {
		need = (3<<20 + hp - 1) / hp
	}
	if hp == 0 || free < need {
		if !errors.Is(err, ErrUnsupported) || (hp > 0 && !strings.Contains(err.Error(), "vm.nr_hugepages")) {
			t.Fatalf("Hugepagesize %d, %d free: %v", hp, free, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Len()%hp != 0 || b.Len() < 3<<20 {
		t.Fatalf("%d bytes, huge pages of %d", b.Len(), hp)
	}
	mem := b.Bytes()
	mem[0], mem[len(mem)-1] = 1, 2
	if _, after := hugePageInfo(); after > free-need {
		t.Fatalf("HugePages_Free %d after mapping %d of %d", after, need, free)
	}
}
