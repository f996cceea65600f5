package perf

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// TestDVSizing checks the ring's sizing against perftest 6.29's
// derive_validation_chunk_size and derive_validation_chunks_per_qp
// (src/validation_common.h), worked by hand.
func TestDVSizing(t *testing.T) {
	for _, c := range []struct {
		payload, tx uint64
		qps         int
		read        bool
		ops, chunks uint64
	}{
		// 64 KiB x 128 = 8 MiB: not over the limit, so tx_depth; a
		// chunk of 8 MiB is base 4, doubled for 1-2 QPs, x1.5 for read.
		{65536, 128, 1, false, 128, 8},
		{65536, 128, 1, true, 128, 12},
		// 2 x 128 bytes is under 64 KiB: 32768 messages (a multiple of
		// 128); 64 KiB chunks are base 12, doubled, capped at 24.
		{2, 128, 1, false, 32768, 24},
		{2, 128, 2, true, 32768, 24},
		// 1 MiB x 128 is over 8 MiB and 8 messages fit: 8; base 4.
		{1 << 20, 128, 1, false, 8, 8},
		// 4 KiB x 32 = 128 KiB: base 10, x1.5 for 3-4 QPs, x1.5 read.
		{4096, 32, 4, false, 32, 15},
		{4096, 32, 4, true, 32, 22},
		// 100000 x 100 = 10 MB: 83 fit in 8 MiB, fewer than 100: 83;
		// 8300000 bytes are under 8 MiB: base 6.
		{100000, 100, 8, false, 83, 6},
		{100000, 100, 8, true, 83, 9},
	} {
		ops := dvChunkOps(c.payload, c.tx)
		chunks := dvChunksPerQP(c.payload*ops, c.qps, c.read)
		if ops != c.ops || chunks != c.chunks {
			t.Errorf("%d bytes, -t %d, -q %d, read %t: %d messages a chunk, %d chunks; want %d, %d", c.payload, c.tx, c.qps, c.read, ops, chunks, c.ops, c.chunks)
		}
	}
}

// TestDVLayout checks compute_validation_layout's offsets for 2 QPs of
// 4 KiB writes at -t 32 (32 messages a chunk, 20 chunks a QP), worked by
// hand: patterns 3 x 4096 = 12288; 40 markers (320 bytes) end at 12608,
// a multiple of 64; 2 x 20 x 32 x 4096 bytes of slots end at 5255488;
// 2 write returns of 8 bytes.
func TestDVLayout(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Size: 4096, TxDepth: 32, QPs: 2}
	l, err := newDVLayout(&p)
	if err != nil {
		t.Fatal(err)
	}
	if l.ops != 32 || l.chunks != 20 || l.markers != 12288 || l.slots != 12608 || l.returns != 5255488 || l.total != 5255504 {
		t.Fatalf("%+v", l)
	}
	if l.targetOff(1) != 12608+20*32*4096 || l.watchOff() != l.markers {
		t.Fatalf("target %d, watch %d", l.targetOff(1), l.watchOff())
	}
	p.Verb = VerbRead
	// Read: 20 x 1.5 = 30 chunks, capped at 24.
	if l, _ = newDVLayout(&p); l.chunks != 24 || l.targetOff(1) != 0 || l.watchOff() != l.returns || l.total != l.returns+2*24*8 {
		t.Fatalf("read: %+v", l)
	}
}

// dvBench is a layout and a filled buffer with one side's validators, not
// started (finish checks each marker once).
func dvBench(t *testing.T, read bool) (dvLayout, []byte, *validation) {
	t.Helper()
	p := Params{Verb: VerbWrite, Test: TestBW, Size: 4096, TxDepth: 32, QPs: 2}
	if read {
		p.Verb = VerbRead
	}
	l, err := newDVLayout(&p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, l.total)
	l.fill(buf)
	return l, buf, newValidation(l, buf, 8)
}

// land writes pass c of chunk k of QP q as the sender would and moves its
// marker.
func land(l dvLayout, buf []byte, q, k, c uint64) {
	off := l.slots + (q*l.slotsPer+k*l.ops)*l.payload
	b := buf[off : off+l.chunkBytes()]
	for i := range b {
		b[i] = dvPattern(c)
	}
	*(*uint64)(unsafe.Pointer(&buf[l.watchOff()+(q*l.chunks+k)*8])) = c + 1
}

func TestValidationFinds(t *testing.T) {
	t.Run("pass", func(t *testing.T) {
		l, buf, v := dvBench(t, false)
		land(l, buf, 0, 0, 0)
		land(l, buf, 1, 19, 2)
		r := v.finish()
		if !r.Passed || r.Chunks != 2*l.ops || r.Bytes != 2*l.chunkBytes() || r.Errors != 0 || r.Skips != 2 {
			t.Fatalf("%+v", r)
		}
		out, errLine := dvReport(r, "", false)
		if errLine != "" || out != "VALIDATION: PASSED - 64 chunks, 262144 bytes [races=0, retries=0, skips=2, queue_full=0, stale_work=0]\n" {
			t.Fatalf("%q %q", out, errLine)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		l, buf, v := dvBench(t, false)
		land(l, buf, 1, 3, 1)
		buf[l.slots+(l.slotsPer+3*l.ops+5)*l.payload+17] = 0x7e
		r := v.finish()
		if r.Passed || r.Errors != 1 || *r.First != (ValidationError{QP: 1, Chunk: 3, Offset: 17, Expected: 2, Actual: 0x7e}) {
			t.Fatalf("%+v %+v", r, r.First)
		}
		_, errLine := dvReport(r, " (SERVER)", false)
		if errLine != "VALIDATION: FAILED (SERVER) - 1 error(s), first at QP 1, Chunk 3, Offset 17 (expected 0x02, got 0x7e)\n" {
			t.Fatalf("%q", errLine)
		}
	})
	t.Run("next pass overwriting", func(t *testing.T) {
		l, buf, v := dvBench(t, false)
		land(l, buf, 0, 1, 0)
		off := l.slots + (l.ops+10)*l.payload // messages 10.. already of pass 1
		for i := off; i < l.slots+2*l.ops*l.payload; i++ {
			buf[i] = dvPattern(1)
		}
		if r := v.finish(); !r.Passed || r.Races != 1 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("read markers are the fetched values", func(t *testing.T) {
		l, buf, v := dvBench(t, true)
		land(l, buf, 0, 0, 0) // the first fetch returns 1
		if r := v.finish(); !r.Passed || r.Chunks != l.ops {
			t.Fatalf("%+v", r)
		}
		// The peer's markers start at 1 (this side's too: the same fill).
		if m := *(*uint64)(unsafe.Pointer(&buf[l.markers])); m != 1 {
			t.Fatalf("tail marker 0 is %d, want 1", m)
		}
	})
	t.Run("nothing", func(t *testing.T) {
		_, _, v := dvBench(t, false)
		if _, errLine := dvReport(v.finish(), "", false); errLine != "VALIDATION: WARNING - no data validated\n" {
			t.Fatalf("%q", errLine)
		}
	})
}

func TestDataValidationRefusals(t *testing.T) {
	ok := Params{Verb: VerbWrite, Test: TestBW, Host: "h", DataValidation: true}
	for _, c := range []struct {
		name string
		mod  func(p *Params)
		want string
	}{
		{"ok", func(p *Params) {}, ""},
		{"read", func(p *Params) { p.Verb = VerbRead }, ""},
		{"bidir", func(p *Params) { p.Bidir = true }, ""},
		{"duration", func(p *Params) { p.Duration = 4e9 }, ""},
		{"send", func(p *Params) { p.Verb = VerbSend }, "write and read tests only"},
		{"write_imm", func(p *Params) { p.WriteImm = true }, "without --write_with_imm"},
		{"lat", func(p *Params) { p.Test = TestLat }, "bandwidth tests only"},
		{"post list", func(p *Params) { p.PostList = 4 }, "-l"},
		{"infinitely", func(p *Params) { p.RunInfinitely = true; p.Duration = 5e9 }, "--run_infinitely"},
		{"UC", func(p *Params) { p.Conn = UC }, "-c RC"},
		{"mr per qp", func(p *Params) { p.MRPerQP = true }, "--mr_per_qp"},
		{"payload", func(p *Params) { p.Payload = []byte{1} }, "--payload_file_path"},
		{"all sizes", func(p *Params) { p.AllSizes = true }, "-a"},
		{"tx depth", func(p *Params) { p.TxDepth = 16 }, "at least 32, not 16"},
		{"few iterations cap it", func(p *Params) { p.Iters = 20 }, "at least 32, not 20"},
		{"rdma cm", func(p *Params) { p.RDMACM = true }, ""},
		{"mmap", func(p *Params) { p.MmapFile = "/dev/zero" }, "--mmap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ok
			c.mod(&p)
			p.Defaults()
			err := p.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--data_validation")):
				t.Fatalf("got %v, want one naming --data_validation and %q", err, c.want)
			}
		})
	}
}

// TestSessionDataValidation runs rdmactl against rdmactl on the fake
// fabric: the side that receives the data validates it, prints
// perftest's line and fails on a damaged byte.
func TestSessionDataValidation(t *testing.T) {
	base := Params{Test: TestBW, Size: 4096, TxDepth: 32, Iters: 2000, DataValidation: true}
	// 32 messages a chunk: 62 chunks are complete.
	const most = 62 * 32
	for _, c := range []struct {
		name          string
		verb          Verb
		bidir         bool
		srvDV, cliDV  bool
		checkSrv      bool
		checkCli      bool
		corruptWrite  int // -1: none
		wantErrSrv    string
		wantErrClient string
	}{
		{"write", VerbWrite, false, true, true, true, false, -1, "", ""},
		{"read", VerbRead, false, true, true, false, true, -1, "", ""},
		{"write_bidir", VerbWrite, true, true, true, true, true, -1, "", ""},
		{"read_bidir", VerbRead, true, true, true, true, true, -1, "", ""},
		// The last message of the last complete chunk: its pass is the
		// last, so nothing writes the damage over.
		{"write_corrupt", VerbWrite, false, true, true, true, false, most - 1, "1 error(s) in the data received, the first in QP 0 chunk 1 at byte 17", ""},
		{"client_only", VerbWrite, false, false, true, false, false, -1, "data_validation", "data_validation"},
		{"output", VerbWrite, false, true, true, true, false, -1, "", ""},
		{"tx_depths_differ", VerbWrite, false, true, true, false, false, -1, "dv_tx_depth (-t, which sizes --data_validation's ring) is", "dv_tx_depth (-t"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := base, base
			srv.Verb, cli.Verb = c.verb, c.verb
			srv.Bidir, cli.Bidir = c.bidir, c.bidir
			srv.DataValidation, cli.DataValidation = c.srvDV, c.cliDV
			if c.name == "tx_depths_differ" {
				cli.TxDepth = 64
			}
			if c.name == "output" {
				// perftest prints the line whatever --output says.
				srv.Report.Output = OutputBW
			}
			var hook func(s, cl *Session)
			if c.corruptWrite >= 0 {
				hook = func(s, cl *Session) {
					s.Dev.(*fakeDevice).f.corrupt = func(n int, dst []byte) {
						if n == c.corruptWrite {
							dst[17] ^= 0xff
						}
					}
				}
			}
			s, cl, _ := runPairWith(t, srv, cli, 0, hook)
			for _, side := range []struct {
				name  string
				o     *sideOut
				check bool
				want  string
				role  string
			}{{"server", s, c.checkSrv, c.wantErrSrv, " (SERVER)"}, {"client", cl, c.checkCli, c.wantErrClient, " (CLIENT)"}} {
				if side.want != "" {
					var pe *PeerError
					if !errors.As(side.o.err, &pe) || !strings.Contains(side.o.err.Error(), side.want) {
						t.Fatalf("%s: %v; want a peer error with %q", side.name, side.o.err, side.want)
					}
					continue
				}
				if side.o.err != nil {
					t.Fatalf("%s: %v\n%s", side.name, side.o.err, side.o.out.String())
				}
				v := side.o.res.Validation
				if !side.check {
					if v != nil || strings.Contains(side.o.out.String(), "VALIDATION") {
						t.Fatalf("%s validated, but it sent the data:\n%s", side.name, side.o.out.String())
					}
					continue
				}
				if v == nil || !v.Passed || v.Chunks == 0 || v.Chunks%32 != 0 || v.Chunks > most || v.Bytes != v.Chunks*4096 {
					t.Fatalf("%s: %+v", side.name, v)
				}
				role := ""
				if c.bidir {
					role = side.role
				}
				if want := "VALIDATION: PASSED" + role + " - "; c.name == "output" {
					if lines := strings.Split(strings.TrimSpace(side.o.out.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], want) {
						t.Fatalf("--output: want the figure, then %q:\n%s", want, side.o.out.String())
					}
				} else if !strings.Contains(side.o.out.String(), resultLine+want) {
					t.Fatalf("%s: no %q after the results:\n%s", side.name, want, side.o.out.String())
				}
			}
		})
	}
}

// TestDVSenderLeaves runs the sender's loop on the fake fabric and reads
// the validating side's memory afterwards, when nothing moves: every
// chunk holds the pattern its marker names, and the markers count the
// chunks completed. 1000 messages a QP, 32 a chunk, a ring of 20 chunks
// (640 messages; read 24, 768): pass 0 fills chunks 0-19, pass 1 chunks
// 0-10 and the first 8 messages of chunk 11, which keeps its pass-0
// marker and is skipped (the validators' "race").
func TestDVSenderLeaves(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbRead} {
		t.Run(v.String(), func(t *testing.T) {
			p := Params{Verb: v, Test: TestBW, Iters: 1000, Size: 4096, TxDepth: 32, QPs: 2, CQMod: 16, DataValidation: true}
			g := newLoopRig(t, p, false)
			g.r.prepare(4096)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW"))
			}
			l, _ := newDVLayout(g.r.p)
			partial := 1000 % l.slotsPer / l.ops
			// The validating side: the peer's memory for write, ours
			// for read.
			buf := g.their.Buf
			if v == VerbRead {
				buf = g.mine.Buf
			}
			var total uint64
			for q := uint64(0); q < l.qps; q++ {
				for k := uint64(0); k < l.chunks; k++ {
					m := *(*uint64)(unsafe.Pointer(&buf[l.watchOff()+(q*l.chunks+k)*8]))
					total += m
					if m == 0 || k == partial {
						continue
					}
					off := l.slots + (q*l.slotsPer+k*l.ops)*l.payload
					for i, b := range buf[off : off+l.chunkBytes()] {
						if b != dvPattern(m-1) {
							t.Fatalf("QP %d chunk %d (marker %d) byte %d is %#x, want %#x", q, k, m, i, b, dvPattern(m-1))
						}
					}
				}
			}
			// Read: the fetched values are the peer's words before
			// the add, 1-based (the markers start at 1).
			ring := map[Verb]uint64{VerbWrite: 640, VerbRead: 768}[v] // 20 chunks, or 24 for read
			if want := 2 * (1000 / l.ops); total != want || l.slotsPer != ring {
				t.Fatalf("markers add up to %d, want %d (a ring of %d)", total, want, l.slotsPer)
			}
		})
	}
}
