// Package perfrun runs a cluster test's tests with perf's engine: each
// test is one perf session between two endpoints, its server on the
// destination's device and its client on the source's, over perftest's
// exchange, as one 'rdmactl perf' pair.
package perfrun

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/mesh"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// PortsPerRank is how many exchange ports a rank takes from its base: one
// a device it tests.
const PortsPerRank = 16

// Runner is one rank's mesh.Runner.
type Runner struct {
	Rank    int
	Roster  *mesh.Roster
	Devices []string    // this rank's devices, by index in the plan
	Params  perf.Params // the test (verb, bw or lat, size, duration, QPs)
}

// port is the exchange port of endpoint e: its rank's base plus its
// device.
func (r *Runner) port(e mesh.Endpoint) int { return r.Roster.Members[e.Rank].Port + e.Dev }

func (r *Runner) open(dev int) (perf.Device, string, error) {
	if dev < 0 || dev >= len(r.Devices) {
		return nil, "", fmt.Errorf("no device %d on rank %d", dev, r.Rank)
	}
	name := r.Devices[dev]
	vd, err := inventory.LiveVerbsDevice(name)
	if err != nil {
		return nil, name, err
	}
	d, err := perf.OpenDevice(vd, r.Params.IBPort)
	return d, name, err
}

// Serve starts the server side of t: it listens before it returns.
func (r *Runner) Serve(ctx context.Context, t mesh.Test, round int) (func() error, error) {
	d, name, err := r.open(t.Dst.Dev)
	if err != nil {
		return nil, err
	}
	p := r.Params
	p.Server, p.Host, p.Device, p.Port = true, "", name, r.port(t.Dst)
	p.Defaults()
	ln, err := perf.Listen("", p.Port)
	if err != nil {
		d.Close()
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		_, err := (&perf.Session{P: &p, Dev: d, Listener: ln}).Run(ctx)
		ln.Close()
		done <- err
	}()
	return func() error { return <-done }, nil
}

// Client runs the client side of t against the destination's rank at
// addr and reports its figure: the average bandwidth in MiB/s, or the
// typical latency in µs.
func (r *Runner) Client(ctx context.Context, t mesh.Test, round int, addr string) mesh.Outcome {
	d, name, err := r.open(t.Src.Dev)
	if err != nil {
		return mesh.Outcome{Err: err.Error()}
	}
	p := r.Params
	p.Server, p.Device, p.Port = false, name, r.port(t.Dst)
	p.Host = addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		p.Host = h
	}
	p.Defaults()
	res, err := (&perf.Session{P: &p, Dev: d}).Run(ctx)
	o := mesh.Outcome{}
	if res != nil {
		o.Report, _ = json.Marshal(res)
		switch {
		case len(res.BW) > 0:
			o.Figure = res.BW[0].BWAvg
		case len(res.Lat) > 0:
			o.Figure = res.Lat[0].Typical
		}
	}
	if err != nil {
		o.Err = err.Error()
	}
	return o
}

// PortBase is a rank's exchange port base: base plus room for the ranks
// before it on its host.
func PortBase(base, localRank int) int { return base + localRank*PortsPerRank }

// ParsePort checks an exchange port base.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n+PortsPerRank*64 > 65535 {
		return 0, fmt.Errorf("%q: want a port from 1 to %d", s, 65535-PortsPerRank*64)
	}
	return n, nil
}
