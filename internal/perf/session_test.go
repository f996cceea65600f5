package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// pair runs a server and a client Session over loopback TCP on one fake
// fabric and returns both results and outputs.
type sideOut struct {
	res *Result
	err error
	out bytes.Buffer
}

func runPair(t *testing.T, srv, cli Params) (s, c *sideOut, f *fakeFabric) {
	t.Helper()
	return runPairOn(t, srv, cli, 0)
}

// runPairOn is runPair on two fake devices with this vendor_part_id.
func runPairOn(t *testing.T, srv, cli Params, partID uint32) (s, c *sideOut, f *fakeFabric) {
	t.Helper()
	return runPairWith(t, srv, cli, partID, nil)
}

// runPairWith is runPairOn with hook, if not nil, called on both sessions
// before they run.
func runPairWith(t *testing.T, srv, cli Params, partID uint32, hook func(srv, cli *Session)) (s, c *sideOut, f *fakeFabric) {
	t.Helper()
	f = newFakeFabric()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	srv.Server, srv.Port = true, port
	cli.Host, cli.Port = "127.0.0.1", port
	srv.Defaults()
	cli.Defaults()
	s, c = &sideOut{}, &sideOut{}
	var wg sync.WaitGroup
	wg.Add(2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sd, cd := newFakeDevice(f, 1), newFakeDevice(f, 2)
	sd.port.VendorPartID, cd.port.VendorPartID = partID, partID
	ss := &Session{P: &srv, Dev: sd, Out: &s.out, Listener: l, StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
	cs := &Session{P: &cli, Dev: cd, Out: &c.out, StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
	if hook != nil {
		hook(ss, cs)
	}
	go func() {
		defer wg.Done()
		s.res, s.err = ss.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		c.res, c.err = cs.Run(ctx)
	}()
	wg.Wait()
	return s, c, f
}

func TestSessionPairs(t *testing.T) {
	type tc struct {
		name string
		p    Params
	}
	var cases []tc
	for _, v := range []Verb{VerbWrite, VerbRead, VerbSend} {
		for _, tt := range []Test{TestBW, TestLat} {
			cases = append(cases, tc{fmt.Sprintf("%s_%s", v, tt), Params{Verb: v, Test: tt, Iters: 200}})
		}
	}
	cases = append(cases,
		tc{"send_bw_UD", Params{Verb: VerbSend, Test: TestBW, Conn: UD, Size: 512, Iters: 300}},
		tc{"send_lat_UD", Params{Verb: VerbSend, Test: TestLat, Conn: UD, Iters: 100}},
		tc{"write_bw_bidir_2qp", Params{Verb: VerbWrite, Test: TestBW, Bidir: true, QPs: 2, Iters: 100}},
		tc{"send_bw_bidir_2qp", Params{Verb: VerbSend, Test: TestBW, Bidir: true, QPs: 2, Iters: 100}},
		tc{"send_bw_bidir_UD", Params{Verb: VerbSend, Test: TestBW, Bidir: true, Conn: UD, Size: 512, Iters: 100}},
		tc{"send_bw_bidir_all", Params{Verb: VerbSend, Test: TestBW, Bidir: true, AllSizes: true, Iters: 20}},
		tc{"write_bw_all", Params{Verb: VerbWrite, Test: TestBW, AllSizes: true, Iters: 20}},
		tc{"send_bw_all", Params{Verb: VerbSend, Test: TestBW, AllSizes: true, Iters: 20}},
		tc{"write_lat_all", Params{Verb: VerbWrite, Test: TestLat, AllSizes: true, Iters: 20}},
		tc{"read_bw_postlist", Params{Verb: VerbRead, Test: TestBW, PostList: 4, Iters: 200, Size: 4096}},
		// Duration runs: each side keeps its own clock, so the sides'
		// start skew must stay under the margin (the peer then stops
		// after this side's window). Both sessions spin in this one
		// process, and on busy CPUs the start handshakes could skew them by
		// more than 100 ms (failures 1 in 4 with a CPU hog; also before
		// the waits changed).
		tc{"write_lat_duration", Params{Verb: VerbWrite, Test: TestLat, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}},
		tc{"send_lat_duration", Params{Verb: VerbSend, Test: TestLat, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}},
		tc{"read_lat_duration", Params{Verb: VerbRead, Test: TestLat, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}},
		tc{"write_bw_duration", Params{Verb: VerbWrite, Test: TestBW, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}},
		// Four QPs: the loops' message total (per-QP count times QPs)
		// once wrapped to 0 in duration mode, and they measured nothing.
		// (Not send: the fake's receiver, a goroutine of this process,
		// falls behind and the fake has no RNR retries to wait for it.)
		tc{"write_bw_duration_q4", Params{Verb: VerbWrite, Test: TestBW, QPs: 4, Duration: 800 * time.Millisecond, Margin: 250 * time.Millisecond}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, cl, f := runPair(t, c.p, c.p)
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v\nclient: %v\n--- server\n%s--- client\n%s", s.err, cl.err, s.out.String(), cl.out.String())
			}
			if f.live != 0 {
				t.Fatalf("%d fake objects leaked", f.live)
			}
			// The fakes have no detached queues: the plain loop, in
			// every mode, and the result says so (a write or read
			// server that runs no loop says nothing).
			if s.res.Loop != "plain" && s.res.Loop != "" || cl.res.Loop != "plain" {
				t.Fatalf("loop: server %q, client %q; want plain", s.res.Loop, cl.res.Loop)
			}
			p := c.p
			p.Defaults()
			if p.Test == TestBW {
				for _, r := range cl.res.BW {
					if r.Iters == 0 {
						t.Fatalf("the client measured no message: %+v\n%s", cl.res.BW, cl.out.String())
					}
				}
			}
			switch {
			case p.Test == TestBW && p.Verb != VerbSend && !p.Bidir:
				// The server prints the client's numbers, as perftest.
				last := cl.res.BW[len(cl.res.BW)-1]
				last.Seconds = 0
				if len(s.res.BW) != 1 || s.res.BW[0] != last || s.res.Source != "peer" {
					t.Fatalf("server %+v, client %+v", s.res.BW, cl.res.BW)
				}
			case p.Test == TestBW:
				if len(s.res.BW) == 0 || len(s.res.BW) != len(cl.res.BW) {
					t.Fatalf("server %+v, client %+v", s.res.BW, cl.res.BW)
				}
				for i := range s.res.BW {
					if p.Duration == 0 && s.res.BW[i].Iters != cl.res.BW[i].Iters {
						t.Fatalf("iterations differ: server %+v, client %+v", s.res.BW[i], cl.res.BW[i])
					}
					// -b: both sides print their sum of the two directions.
					if p.Bidir && (s.res.BW[i].BWAvg != cl.res.BW[i].BWAvg || s.res.BW[i].MsgRate != cl.res.BW[i].MsgRate) {
						t.Fatalf("bidirectional sums differ: server %+v, client %+v", s.res.BW[i], cl.res.BW[i])
					}
				}
			case p.Verb == VerbRead:
				if len(cl.res.Lat) != 1 || (p.Duration == 0 && cl.res.Lat[0].Samples != p.Iters) || cl.res.Lat[0].Samples == 0 {
					t.Fatalf("client %+v", cl.res.Lat)
				}
			default:
				if len(s.res.Lat) == 0 || len(s.res.Lat) != len(cl.res.Lat) {
					t.Fatalf("server %+v, client %+v", s.res.Lat, cl.res.Lat)
				}
				// Duration runs: no sample count is asserted. On a loaded
				// host the two spinning sessions in this one process get
				// the CPUs in turns, and a round trip on the fake took up
				// to 300 ms: 0 or 1 samples in a 300 ms window (seen on
				// main too, load average 13 on 2 cores).
				if p.Duration == 0 {
					a, b := s.res.Lat[0].Samples, cl.res.Lat[0].Samples
					// The side that posts first (write: the
					// server, send: the client) takes one fewer.
					first, other := a, b
					if p.Verb == VerbSend {
						first, other = b, a
					}
					if first != p.Iters-2 || other != p.Iters-1 {
						t.Fatalf("samples server %d client %d for %d iterations", a, b, p.Iters)
					}
				}
			}
			for _, o := range []string{s.out.String(), cl.out.String()} {
				if !strings.Contains(o, resultLine) {
					t.Fatalf("no perftest layout:\n%s", o)
				}
			}
			// JSON's info has the run's parameters, as the header.
			in := cl.res.Info
			if in.TxDepth != p.TxDepth || in.RxDepth != p.RxDepth || in.CQMod != p.CQMod || in.PostList != p.PostList || in.Inline != 0 {
				t.Fatalf("info %+v for params %+v", in, p)
			}
			if (in.OutReads > 0) != (p.Verb == VerbRead) {
				t.Fatalf("outstanding_reads %d in a %s test", in.OutReads, p.Verb)
			}
		})
	}
}

// On a device perftest knows (here a ConnectX-5's part ID), latency tests
// default to its inline sizes; the header, the JSON and the QPs agree.
func TestSessionInlineOnKnownDevice(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want int
	}{
		{Params{Verb: VerbWrite, Test: TestLat, Iters: 50}, 220},
		{Params{Verb: VerbSend, Test: TestLat, Iters: 50}, 236},
		{Params{Verb: VerbSend, Test: TestLat, Conn: UD, Iters: 50}, 188},
		{Params{Verb: VerbWrite, Test: TestBW, Iters: 50}, 0},
		{Params{Verb: VerbWrite, Test: TestLat, Iters: 50, Inline: 16}, 16},
	} {
		if c.p.Inline == 0 {
			c.p.Inline = InlineDeviceDefault
		}
		s, cl, _ := runPairOn(t, c.p, c.p, 4119)
		if s.err != nil || cl.err != nil {
			t.Fatalf("%s %s: server: %v client: %v", c.p.Verb, c.p.Test, s.err, cl.err)
		}
		hdr := fmt.Sprintf(" Max inline data : %d[B]\n", c.want)
		for _, side := range []*sideOut{s, cl} {
			if side.res.Info.Inline != c.want || !strings.Contains(side.out.String(), hdr) {
				t.Fatalf("%s %s %s: info.max_inline_data %d, want %d; header:\n%s", c.p.Verb, c.p.Test, c.p.Conn, side.res.Info.Inline, c.want, side.out.String())
			}
		}
	}
}

// -U prints every sample in the order taken, as perftest's -U: "#, usec",
// one "N, value" line each, then the table's header and the row again;
// the JSON row holds the same samples, and they make the row's figures.
func TestSessionUnsorted(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbRead, VerbSend} {
		t.Run(v.String(), func(t *testing.T) {
			p := Params{Verb: v, Test: TestLat, Iters: 60, Unsorted: true}
			s, cl, _ := runPair(t, p, p)
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			out := cl.out.String()
			i := strings.Index(out, "#, usec\n")
			if i < 0 {
				t.Fatalf("no \"#, usec\" line:\n%s", out)
			}
			lines := strings.Split(out[i:], "\n")[1:]
			row := cl.res.Lat[0]
			if len(row.Unsorted) != int(row.Samples) || row.Samples == 0 {
				t.Fatalf("%d unsorted samples in the JSON row, %d samples", len(row.Unsorted), row.Samples)
			}
			lo, hi := row.Unsorted[0], row.Unsorted[0]
			for k, x := range row.Unsorted {
				// C's %g: six significant digits. (Comparing both
				// at three digits failed when the printed value
				// rounded across a boundary, 181.4995 -> 181.5.)
				if want := fmt.Sprintf("%d, %s", k+1, strconv.FormatFloat(x, 'g', 6, 64)); lines[k] != want {
					t.Fatalf("line %q, want %q (sample %g)", lines[k], want, x)
				}
				lo, hi = min(lo, x), max(hi, x)
			}
			if rest := strings.Join(lines[row.Samples:], "\n"); !strings.HasPrefix(rest, strings.TrimSuffix(resultLine+latHeader, "\n")) {
				t.Fatalf("after the samples, not the header again:\n%s", rest)
			}
			if fmt.Sprintf("%.2f %.2f", lo, hi) != fmt.Sprintf("%.2f %.2f", row.Min, row.Max) {
				t.Fatalf("samples span %g..%g, the row says %g..%g", lo, hi, row.Min, row.Max)
			}
		})
	}
	for _, p := range []Params{{Verb: VerbWrite, Test: TestBW, Unsorted: true}, {Verb: VerbWrite, Test: TestLat, Duration: time.Second, Unsorted: true}} {
		p.Server = true
		p.Defaults()
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "-U") {
			t.Fatalf("%+v: %v, want a -U error", p, err)
		}
	}
}

func TestSessionMismatch(t *testing.T) {
	a := Params{Verb: VerbWrite, Test: TestBW, Size: 4096, Iters: 100}
	b := a
	b.Size = 65536
	s, c, f := runPair(t, a, b)
	for _, e := range []error{s.err, c.err} {
		var pe *PeerError
		if !errors.As(e, &pe) || !strings.Contains(e.Error(), "-s") {
			t.Fatalf("want a peer error naming -s, got %v", e)
		}
	}
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
	b = a
	b.Verb = VerbRead
	s, c, _ = runPair(t, a, b)
	if s.err == nil || c.err == nil || !strings.Contains(c.err.Error(), "verb") {
		t.Fatalf("verb mismatch: %v / %v", s.err, c.err)
	}
}

func TestClientUnreachable(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := Params{Verb: VerbWrite, Test: TestBW, Host: "127.0.0.1", Port: port}
	p.Defaults()
	start := time.Now()
	d := newFakeDevice(newFakeFabric(), 1)
	_, err := (&Session{P: &p, Dev: d, DialTimeout: time.Second}).Run(context.Background())
	var pe *PeerError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("got %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// scriptedPeer serves one connection with fn and reports its error.
func scriptedPeer(t *testing.T, fn func(c net.Conn) error) (int, chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan error, 1)
	go func() {
		defer l.Close()
		c, err := l.Accept()
		if err != nil {
			ch <- err
			return
		}
		defer c.Close()
		ch <- fn(c)
	}()
	return l.Addr().(*net.TCPAddr).Port, ch
}

func readN(c net.Conn, n int) ([]byte, error) {
	b := make([]byte, n)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadFull(c, b)
	return b, err
}

// perftestServerPrefix plays perftest 6.06's side of V, SD1, SD2, M.
func perftestServerPrefix(c net.Conn, version string) error {
	steps := []struct {
		n     int
		reply []byte
	}{
		{16, append([]byte(version), make([]byte, 16-len(version))...)},
		{4, []byte{0, 0, 0x10, 0}},
		{4, []byte{0, 0, 0, 64}},
		{2, []byte("3\x00")},
	}
	for _, s := range steps {
		if _, err := readN(c, s.n); err != nil {
			return err
		}
		if _, err := c.Write(s.reply); err != nil {
			return err
		}
	}
	return nil
}

// TestClientAgainstScriptedPerftestWriteBWServer replays ib_write_bw 6.06's
// server side byte by byte (write_bw.c: P, K×N, K×N, K, then K, R, K and
// "done"), with its target memory on the fake fabric.
func TestClientAgainstScriptedPerftestWriteBWServer(t *testing.T) {
	f := newFakeFabric()
	srvDev := newFakeDevice(f, 1)
	res, _ := srvDev.Setup(SetupConfig{BufSize: 1 << 20, Type: verbs.QPTypeRC, NumQPs: 1, SendWR: 1, RecvWR: 1, CQE: 1})
	key := cKeyGID(Dest{OutReads: 1, QPN: res.QPs[0].QPN, PSN: 0x123456, RKey: res.RKey, VAddr: res.Addr + 4096, GID: srvDev.port.GIDs[1].GID})
	var got BWReport
	port, done := scriptedPeer(t, func(c net.Conn) error {
		if err := perftestServerPrefix(c, "6.06"); err != nil {
			return err
		}
		for i := 0; i < 4; i++ { // K×N, K×N, K (N=1), then K after the run
			b, err := readN(c, 108)
			if err != nil {
				return fmt.Errorf("K%d: %v", i, err)
			}
			if _, err := parseKey(b, keyForm{gid: true}); err != nil {
				return fmt.Errorf("K%d: %v", i, err)
			}
			if _, err := c.Write([]byte(key)); err != nil {
				return err
			}
		}
		var f [5][]byte
		for i := range f {
			b, err := readN(c, 8)
			if err != nil {
				return err
			}
			f[i] = b
			if _, err := c.Write(make([]byte, 8)); err != nil {
				return err
			}
		}
		var err error
		if got, err = parseBWReport(f); err != nil {
			return err
		}
		if _, err := readN(c, 108); err != nil {
			return err
		}
		_, _ = c.Write([]byte(key))
		_, _ = c.Write([]byte("done\x00"))
		return nil
	})
	p := Params{Verb: VerbWrite, Test: TestBW, Host: "127.0.0.1", Port: port, Iters: 100, Size: 4096}
	p.Defaults()
	var out bytes.Buffer
	r, err := (&Session{P: &p, Dev: newFakeDevice(f, 2), Out: &out}).Run(context.Background())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if perr := <-done; perr != nil {
		t.Fatalf("scripted perftest: %v", perr)
	}
	if got.Size != 4096 || got.Iters != 100 || got.BWAvg != r.BW[0].BWAvg {
		t.Fatalf("perftest received %+v, we measured %+v", got, r.BW[0])
	}
}

func TestGarbledAndVanishingPeer(t *testing.T) {
	type peerCase struct {
		fn   func(c net.Conn) error
		want string // in the error
	}
	cases := map[string]peerCase{
		"garbled version": {func(c net.Conn) error {
			_, _ = readN(c, 16)
			_, err := c.Write([]byte("hello, world!!!!"))
			return err
		}, "version record"},
		"old version": {func(c net.Conn) error {
			_, _ = readN(c, 16)
			_, err := c.Write(append([]byte("5.60"), make([]byte, 12)...))
			return err
		}, "5.6"},
		"garbled key": {func(c net.Conn) error {
			if err := perftestServerPrefix(c, "6.06"); err != nil {
				return err
			}
			_, _ = readN(c, 108)
			_, err := c.Write(bytes.Repeat([]byte("x"), 108))
			return err
		}, "key record"},
		"closes": {func(c net.Conn) error {
			// Read our key record first: closing with unread data would
			// send RST (the "resets" case), not FIN.
			if err := perftestServerPrefix(c, "6.06"); err != nil {
				return err
			}
			_, err := readN(c, 108)
			return err
		}, "closed the connection while reading the key record (QP address)"},
		"resets": {func(c net.Conn) error {
			// A killed peer with unread data: the kernel sends RST.
			if err := perftestServerPrefix(c, "6.06"); err != nil {
				return err
			}
			time.Sleep(100 * time.Millisecond) // our key record arrives unread
			return c.(*net.TCPConn).SetLinger(0)
		}, "reset the connection while reading the key record (QP address)"},
		"silent": {func(c net.Conn) error {
			_, _ = readN(c, 16)
			time.Sleep(3 * time.Second)
			return nil
		}, "did not answer within 1s while reading version"},
	}
	for name, pc := range cases {
		t.Run(name, func(t *testing.T) {
			port, done := scriptedPeer(t, pc.fn)
			p := Params{Verb: VerbWrite, Test: TestBW, Host: "127.0.0.1", Port: port}
			p.Defaults()
			f := newFakeFabric()
			start := time.Now()
			_, err := (&Session{P: &p, Dev: newFakeDevice(f, 2), StepTimeout: time.Second}).Run(context.Background())
			var pe *PeerError
			if !errors.As(err, &pe) {
				t.Fatalf("want a PeerError, got %v", err)
			}
			if strings.Contains(err.Error(), "\n") || time.Since(start) > 3*time.Second {
				t.Fatalf("error %q after %v", err, time.Since(start))
			}
			if !strings.Contains(err.Error(), pc.want) {
				t.Fatalf("error %q does not say %q", err, pc.want)
			}
			if f.live != 0 {
				t.Fatalf("%d fake objects leaked", f.live)
			}
			<-done
		})
	}
}

func TestInterruptPrintsPartial(t *testing.T) {
	f := newFakeFabric()
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	srv := Params{Verb: VerbWrite, Test: TestLat, Server: true, Port: port, Duration: time.Hour, Margin: time.Millisecond}
	cli := Params{Verb: VerbWrite, Test: TestLat, Host: "127.0.0.1", Port: port, Duration: time.Hour, Margin: time.Millisecond}
	srv.Defaults()
	cli.Defaults()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var serr error
	var sres *Result
	var started atomic.Bool
	wg.Add(1)
	go func() {
		defer wg.Done()
		sres, serr = (&Session{P: &srv, Dev: newFakeDevice(f, 1), Listener: l}).Run(context.Background())
	}()
	var out bytes.Buffer
	go func() {
		// Interrupt once the pair is well into its loop: a fixed delay
		// was not always enough when the CPUs were busy (both sessions
		// spin in this one process).
		for deadline := time.Now().Add(20 * time.Second); f.postCount() < 100 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
		started.Store(true)
		cancel()
	}()
	r, err := (&Session{P: &cli, Dev: newFakeDevice(f, 2), Out: &out}).Run(ctx)
	wg.Wait()
	if !errors.Is(err, context.Canceled) || r == nil || !r.Interrupted || len(r.Lat) != 1 || r.Lat[0].Samples == 0 {
		t.Fatalf("client: %v %+v", err, r)
	}
	if !strings.Contains(out.String(), " 2       ") {
		t.Fatalf("no partial row:\n%s", out.String())
	}
	var pe *PeerError
	if !errors.As(serr, &pe) {
		t.Fatalf("server: want a peer error, got %v (%+v)", serr, sres)
	}
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
}

// A perftest sender with another -s: the receiver names both sizes.
func TestSendLengthMismatch(t *testing.T) {
	g := newLoopRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 10, Size: 512, Server: true}, false)
	g.r.prepare(512)
	if err := g.r.postRecvs(10); err != nil {
		t.Fatal(err)
	}
	wr := []verbs.SendWR{{Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: g.their.Addr, Length: 100, LKey: g.their.LKey}}}
	_ = g.their.QPs[0].PostSend(wr)
	err := g.r.loopErr(g.r.runBWRecv(), "send_bw")
	var pe *PeerError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "100-byte") || !strings.Contains(err.Error(), "512") {
		t.Fatalf("got %v", err)
	}
}

// A duration write_lat whose client starts its clock later than the
// margin: the server's run ends while the client is still in its
// sampling window. The server must not release its memory and QP under
// the client's next write (which failed with a remote access error on the
// fake, as it would on a device: how write_lat_duration failed under
// load), and the client ends its run when the server's ends, with the
// samples it took, without an error.
func TestWriteLatDurationLateClient(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestLat, Duration: 800 * time.Millisecond, Margin: 200 * time.Millisecond}
	s, c, f := runPairWith(t, p, p, 0, func(srv, cli *Session) {
		cli.testBeforeLoop = func() { time.Sleep(400 * time.Millisecond) }
	})
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v\nclient: %v", s.err, c.err)
	}
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
	if len(s.res.Lat) != 1 || len(c.res.Lat) != 1 {
		t.Fatalf("rows: server %+v, client %+v", s.res.Lat, c.res.Lat)
	}
	// Not asserted (see TestSessionPairs): on a loaded host a window can
	// hold no round trip.
	t.Logf("samples: server %d, client %d", s.res.Lat[0].Samples, c.res.Lat[0].Samples)
}

// TestSessionUDSizeToMTU: a UD test's default size above the path MTU
// becomes the MTU, as perftest makes it, with perftest's two lines under
// its name and rdmactl's note otherwise; an -s above the MTU is refused
// in one line, as perftest refuses it.
func TestSessionUDSizeToMTU(t *testing.T) {
	for _, asPerftest := range []bool{false, true} {
		p := Params{Verb: VerbSend, Test: TestBW, Conn: UD, Iters: 50, Report: ReportOpts{AsPerftest: asPerftest}}
		var notes [2]strings.Builder
		s, c, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) { srv.Notes, cli.Notes = &notes[0], &notes[1] })
		if s.err != nil || c.err != nil {
			t.Fatalf("as perftest %v: server: %v client: %v", asPerftest, s.err, c.err)
		}
		if got := c.res.BW[0].Size; got != 1024 {
			t.Errorf("as perftest %v: %d-byte messages, want the MTU's 1024", asPerftest, got)
		}
		want := "rdmactl: perf: UD messages are at most the path MTU: 1024 bytes instead of 65536 (as perftest)\n"
		if asPerftest {
			want = " Max msg size in UD is MTU 1024\n Changing to this MTU\n"
		}
		for i := range notes {
			if got := notes[i].String(); !strings.HasSuffix(got, want) {
				t.Errorf("as perftest %v, side %d: notes %q, want %q", asPerftest, i, got, want)
			}
		}
	}
	p := Params{Verb: VerbSend, Test: TestBW, Conn: UD, Iters: 50, Size: 65536}
	s, c, _ := runPairWith(t, p, p, 0, nil)
	for i, o := range []*sideOut{s, c} {
		if o.err == nil || !strings.Contains(o.err.Error(), "-s 65536: a UD message cannot be larger than the path MTU (1024 bytes)") {
			t.Errorf("side %d with -s 65536: %v", i, o.err)
		}
	}
}

// TestSessionReversed: --reversed on both sides swaps the benchmark's
// roles and keeps the exchange's: the side that listened sends (its
// result is the client's, with the measured rows) and the side that
// dialled prints perftest's server banner and waits; one side alone is
// refused by an rdmactl peer, naming the option.
func TestSessionReversed(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbSend, VerbRead} {
		p := Params{Verb: v, Test: TestBW, Iters: 100, Reversed: true}
		s, c, _ := runPairWith(t, p, p, 0, nil)
		if s.err != nil || c.err != nil {
			t.Fatalf("%s: listener: %v dialler: %v", v, s.err, c.err)
		}
		if s.res.Role != "client" || c.res.Role != "server" {
			t.Errorf("%s: the listener's role %q, the dialler's %q; want client and server", v, s.res.Role, c.res.Role)
		}
		const banner = "* Waiting for client to connect... *"
		if strings.Contains(s.out.String(), banner) || !strings.Contains(c.out.String(), banner) {
			t.Errorf("%s: the banner must be the dialler's:\nlistener:\n%s\ndialler:\n%s", v, s.out.String(), c.out.String())
		}
		if len(s.res.BW) != 1 || s.res.BW[0].Iters != 100 || !(s.res.BW[0].BWAvg > 0) {
			t.Errorf("%s: the listener (now the sender) reports %+v", v, s.res.BW)
		}
	}
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 100}
	q := p
	q.Reversed = true
	s, c, _ := runPairWith(t, p, q, 0, nil)
	if c.err == nil || !strings.Contains(c.err.Error(), "--reversed") {
		t.Errorf("one side --reversed: listener %v, dialler %v; want the dialler to name --reversed", s.err, c.err)
	}
}

// TestSessionMTUAboveActive: -m above the port's active MTU runs at the
// active MTU; under perftest's name with perftest's two lines (its enum
// ibv_mtu value: 1024 is 3).
func TestSessionMTUAboveActive(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, MTU: 4096, Report: ReportOpts{AsPerftest: true}}
	s, c, _ := runPairWith(t, p, p, 0, nil)
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	for i, o := range []*sideOut{s, c} {
		if !strings.Contains(o.out.String(), "Requested mtu is higher than active mtu \nChanging to active mtu - 3\n") {
			t.Errorf("side %d:\n%s", i, o.out.String())
		}
	}
}

// TestSessionInvalidMTU: -m with a size that is no RDMA MTU (a script's
// Ethernet 1500) warns on stderr and runs at the port's active MTU, as
// perftest's set_mtu; its three lines under perftest's name.
func TestSessionInvalidMTU(t *testing.T) {
	for _, perftest := range []bool{false, true} {
		p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, MTU: 1500, Device: "fake0", IBPort: 1, Report: ReportOpts{AsPerftest: perftest}}
		var notes bytes.Buffer
		s, c, _ := runPairWith(t, p, p, 0, func(_, cs *Session) { cs.Notes = &notes })
		if s.err != nil || c.err != nil {
			t.Fatalf("server: %v client: %v", s.err, c.err)
		}
		want := "rdmactl: perf: -m 1500 is no RDMA MTU (256, 512, 1024, 2048, 4096): running at fake0/1's active MTU, 1024 (as perftest)\n"
		if perftest {
			want = " Invalid MTU - 1500 \n Please choose mtu from {256,512,1024,2048,4096}\n Will run with the port active mtu - 3\n"
		}
		if !strings.HasSuffix(notes.String(), want) {
			t.Errorf("perftest %v: stderr %q, want it to end %q", perftest, notes.String(), want)
		}
		if c.res.Info.MTU != 1024 || !strings.Contains(c.out.String(), " Mtu             : 1024[B]\n") {
			t.Errorf("perftest %v: MTU %d\n%s", perftest, c.res.Info.MTU, c.out.String())
		}
	}
}

// TestPerftestBufSize: the size perftest 6.06's 'allocated mmap buffer'
// line names (131072 for write_bw's defaults, as the VM's perftest
// printed).
func TestPerftestBufSize(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want uint64
	}{
		{Params{Verb: VerbWrite, Size: 65536, QPs: 1}, 131072},
		{Params{Verb: VerbWrite, Size: 2, QPs: 1}, 8192},
		{Params{Verb: VerbSend, Conn: UD, Size: 1024, QPs: 1}, 8256},
		{Params{Verb: VerbWrite, Size: 65536, QPs: 3}, 393216},
		{Params{Verb: VerbWrite, Size: 65536, QPs: 3, MRPerQP: true}, 131072},
		{Params{Verb: VerbWrite, Size: 65600, QPs: 1}, 131200},
	} {
		if got := perftestBufSize(&c.p, 4096); got != c.want {
			t.Errorf("%+v: %d, want %d", c.p, got, c.want)
		}
	}
}

// TestSessionForceLink: --force-link as perftest's set_link_layer. The
// port's own link layer changes nothing; Ethernet on an InfiniBand port
// runs with a GID (the header says Ethernet); IB on a RoCE port is
// refused before anything is set up (exit 5).
func TestSessionForceLink(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, Device: "fake0", IBPort: 1, ForceLink: vocab.LinkLayerEthernet}
	s, c, _ := runPair(t, p, p)
	if s.err != nil || c.err != nil {
		t.Fatalf("Ethernet on Ethernet: server %v client %v", s.err, c.err)
	}
	_, c, _ = runPairWith(t, p, p, 0, func(ss, cs *Session) {
		for _, x := range []*Session{ss, cs} {
			x.Dev.(*fakeDevice).port.LinkLayer = vocab.LinkLayerInfiniBand
		}
	})
	if c.err != nil || !strings.Contains(c.out.String(), " Link type       : Ethernet\n") || !strings.Contains(c.out.String(), " GID: ") {
		t.Fatalf("Ethernet on InfiniBand: %v\n%s", c.err, c.out.String())
	}
	p.ForceLink = vocab.LinkLayerInfiniBand
	s, c, _ = runPair(t, p, p)
	for _, e := range []error{s.err, c.err} {
		if !errors.Is(e, verbs.ErrUnsupported) || !strings.Contains(e.Error(), "--force-link IB: fake0/1 is Ethernet (RoCE)") {
			t.Errorf("IB on RoCE: %v, want verbs.ErrUnsupported naming the port", e)
		}
	}
}
