//go:build vmtest

package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Where 'rdmactl link show' spends its time, in-process (no exec cost):
// go test -tags vmtest -run XXX -bench LinkShow, in the VM.

func BenchmarkVMLinkShowWhole(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if code := run(context.Background(), []string{"link", "show"}, io.Discard, io.Discard); code != 0 {
			b.Fatal(code)
		}
	}
}

func BenchmarkVMLinkShowJSON(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if code := run(context.Background(), []string{"-j", "link", "show"}, io.Discard, io.Discard); code != 0 {
			b.Fatal(code)
		}
	}
}

func BenchmarkVMLinkShowNetlinkOnly(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c, err := nldev.Dial()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Ports(); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func BenchmarkVMLinkShowRows(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := linkPorts(b); err != nil {
			b.Fatal(err)
		}
	}
}

// linkPorts is link show's gathering step: the inventory's ports.
func linkPorts(b *testing.B) ([]inventory.Port, error) {
	c, err := nldev.Dial()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	return inventory.Live(c).Ports("", 0, inventory.PortOptions{})
}

func BenchmarkVMLinkShowTableOnly(b *testing.B) {
	rows, err := linkPorts(b)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		var buf bytes.Buffer
		tb := render.NewTable(&buf, "PORT", "STATE", "PHYS_STATE", "LINK_LAYER", "NETDEV", "LID", "SM_LID", "LMC", "RATE", "MTU")
		for _, r := range rows {
			tb.Row(r.Dev, r.State, r.PhysState, r.LinkLayer, r.Netdev, nil, nil, nil, "", "")
		}
		_ = tb.Flush()
	}
}

func BenchmarkVMRootCmdBuild(b *testing.B) {
	for i := 0; i < b.N; i++ {
		newRootCmd(&cmdutil.App{Stdout: io.Discard, Stderr: io.Discard})
	}
}

func benchRead(b *testing.B, path string) {
	for i := 0; i < b.N; i++ {
		if b, err := sysfs.ReadBounded(path); err != nil || len(b) == 0 {
			panic(path + ": empty")
		}
	}
}

func BenchmarkVMSysfsRate(b *testing.B) {
	benchRead(b, "/sys/class/infiniband/rxe0/ports/1/rate")
}

func BenchmarkVMSysfsLinkLayer(b *testing.B) {
	benchRead(b, "/sys/class/infiniband/rxe0/ports/1/link_layer")
}

func BenchmarkVMSysfsNetdevMTU(b *testing.B) {
	benchRead(b, "/sys/class/net/vrxe0/mtu")
}

// BenchmarkVMInspect runs each inspection command of make bench-scale
// in-process, for CPU profiles in the VM (-cpuprofile with -bench
// 'Inspect/NAME').
func BenchmarkVMInspect(b *testing.B) {
	for _, args := range [][]string{
		{"link", "show"}, {"-d", "link", "show"}, {"dev", "show"}, {"-d", "dev", "show"},
		{"res"}, {"gids"}, {"dev", "query"}, {"counters"},
	} {
		name := strings.Join(args, "_")
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if code := run(context.Background(), args, io.Discard, io.Discard); code != 0 {
					b.Fatal(code)
				}
			}
		})
	}
}
