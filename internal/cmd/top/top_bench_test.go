package top

import (
	"io"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/top"
)

// BenchmarkVMTopFrame is one frame of top (-b) in-process over the live
// devices, for CPU profiles in the VM at many devices (scripts/bench-top.sh
// gives the figures against counters --watch). Where there is no RDMA it
// fails at once; the unit tests, which run no benchmark, never start it.
func BenchmarkVMTopFrame(b *testing.B) {
	a := &cmdutil.App{Stdout: io.Discard, Stderr: io.Discard}
	s, closeSrc, err := topSampler(a, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer closeSrc()
	for i := 0; i < b.N; i++ {
		f, err := s.Sample()
		if err != nil {
			b.Fatal(err)
		}
		_ = top.Render(f, top.View{}, top.Plain, 0, 0)
	}
}
