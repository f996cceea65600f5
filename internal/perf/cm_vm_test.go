//go:build vmtest

package perf

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// sysfsCMDevice maps a CM route to its device by node GUID, from sysfs
// (cmd/rdmactl uses the inventory; here the package needs no netlink).
func sysfsCMDevice(r rdmacm.Route) (verbs.Device, error) {
	devs, err := provider.All().Devices()
	if err != nil {
		return verbs.Device{}, err
	}
	want := fmt.Sprintf("%04x:%04x:%04x:%04x", r.NodeGUID>>48, r.NodeGUID>>32&0xffff, r.NodeGUID>>16&0xffff, r.NodeGUID&0xffff)
	for _, d := range devs {
		g, err := os.ReadFile("/sys/class/infiniband/" + d.Name + "/node_guid")
		if err == nil && strings.TrimSpace(string(g)) == want {
			return d, nil
		}
	}
	return verbs.Device{}, fmt.Errorf("no device has node GUID %s", want)
}

// TestVMPerfRDMACMBytes: over -R, the bytes a write, send or read bw run
// moves arrive intact. The side whose memory is the source fills it with
// a random pattern once the CM has connected the QPs; after the run the
// other side's target area must hold exactly that pattern (the last
// message of the run wrote it; before, it was zero).
func TestVMPerfRDMACMBytes(t *testing.T) {
	for i, verb := range []Verb{VerbWrite, VerbSend, VerbRead} {
		t.Run(verb.String(), func(t *testing.T) {
			const size = 4093 // not a multiple of anything the path rounds to
			pattern := make([]byte, size)
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for k := range pattern {
				pattern[k] = byte(rng.Uint32()) | 1 // never zero
			}
			mk := func(server bool) *Session {
				p := &Params{Verb: verb, Test: TestBW, Conn: RC, Server: server, Port: 19300 + i, RDMACM: true,
					Iters: 100, Size: size, Inline: InlineDeviceDefault}
				if !server {
					p.Host = "10.77.0.1"
				}
				p.Defaults()
				return &Session{P: p, CMDevice: sysfsCMDevice, Stall: 30 * time.Second}
			}
			srv, cli := mk(true), mk(false)
			// The source and the target: the writer's and sender's own
			// block 0 (srcOff) goes to the peer's key-record area (dstOff);
			// a READ takes the server's key-record area into the client's
			// block 0.
			src, dst := cli, srv
			srcOff := func(res *Resources, my []Dest) uint64 { return 0 }
			dstOff := func(res *Resources, my []Dest) uint64 { return my[0].VAddr - res.Addr }
			if verb == VerbRead {
				src, dst = srv, cli
				srcOff, dstOff = dstOff, srcOff
			}
			var got, sent []byte
			src.testBefore = func(res *Resources, my []Dest) {
				o := srcOff(res, my)
				copy(res.Buf[o:o+size], pattern)
			}
			// What the source held when the run ended is what went out: a
			// send test overwrites it with srqPattern (srq.go), which an
			// rdmactl receiver checks.
			src.testAfter = func(res *Resources, my []Dest) {
				o := srcOff(res, my)
				sent = append([]byte(nil), res.Buf[o:o+size]...)
			}
			dst.testBefore = func(res *Resources, my []Dest) {
				o := dstOff(res, my)
				if !bytes.Equal(res.Buf[o:o+size], make([]byte, size)) {
					t.Error("the target area is not zero before the run")
				}
			}
			dst.testAfter = func(res *Resources, my []Dest) {
				o := dstOff(res, my)
				got = append([]byte(nil), res.Buf[o:o+size]...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			var serr error
			wg.Add(1)
			port := srv.P.Port
			srvDone := make(chan struct{})
			go func() {
				defer wg.Done()
				defer close(srvDone)
				_, serr = srv.Run(ctx)
			}()
			// The client starts once the server's CM id listens (its
			// connect does not retry), not after a fixed time.
			if !vmcheck.Until(30*time.Second, vmcheck.Closed(srvDone), func() bool { return vmcheck.CMListening(t, port) }) {
				ended := vmcheck.Closed(srvDone)()
				cancel()
				wg.Wait()
				t.Fatalf("no CM id of the server listening on %d within 30 s (server ended first: %v; its error: %v)", port, ended, serr)
			}
			_, cerr := cli.Run(ctx)
			wg.Wait()
			if serr != nil || cerr != nil {
				t.Fatalf("server: %v; client: %v", serr, cerr)
			}
			want := pattern
			if verb == VerbSend {
				want = sent
				if len(sent) != size || bytes.Equal(sent, make([]byte, size)) {
					t.Fatalf("the sender's source area after the run: %d bytes, all zero or missing", len(sent))
				}
			}
			if !bytes.Equal(got, want) {
				n := 0
				for k := range got {
					if k < len(want) && got[k] != want[k] {
						n++
					}
				}
				t.Fatalf("%d of %d bytes differ from what the source sent (got %d bytes)", n, size, len(got))
			}
			t.Logf("%s: %d bytes verified over -R", verb, size)
		})
	}
}
