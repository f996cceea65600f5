package perf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestParsePayload: perftest's payload words, little endian, cut at the
// message size; malformed words named by number.
func TestParsePayload(t *testing.T) {
	for _, c := range []struct {
		text  string
		limit uint64
		want  []byte
		err   string
	}{
		{"0xaabbccdd,0x11223344", 64, []byte{0xdd, 0xcc, 0xbb, 0xaa, 0x44, 0x33, 0x22, 0x11}, ""},
		{"0xaabbccdd,\n0x11223344\n", 64, []byte{0xdd, 0xcc, 0xbb, 0xaa, 0x44, 0x33, 0x22, 0x11}, ""},
		{"0xAABBCCDD , 0X11223344\r\n", 6, []byte{0xdd, 0xcc, 0xbb, 0xaa, 0x44, 0x33}, ""},
		{"0xaabbccdd,0xzz", 64, nil, "word 1"},
		{"0xaabbccdd,0x1122334g", 64, nil, "word 1"},
		{"aabbccdd00", 64, nil, "word 0"},
		{"\n,\n", 64, nil, "no words"},
	} {
		got, err := ParsePayload([]byte(c.text), c.limit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error naming %s", c.text, err, c.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%q: % x, %v; want % x", c.text, got, err, c.want)
		}
	}
}

// TestLoadPayload: only a regular file is read (a FIFO would block);
// the pattern repeats through each block, and write_lat keeps zeroes.
func TestLoadPayload(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := Params{Verb: VerbSend, Test: TestBW, Size: 16}
	if err := p.LoadPayload(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("FIFO: %v", err)
	}
	file := filepath.Join(dir, "payload")
	if err := os.WriteFile(file, []byte("0x04030201,0x08070605\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.LoadPayload(file); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 24)
	p.fillPayload(buf, 12)
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4}
	if !bytes.Equal(buf, want) {
		t.Fatalf("filled % x, want % x", buf, want)
	}
	lat := Params{Verb: VerbWrite, Test: TestLat, Payload: p.Payload}
	clear(buf)
	lat.fillPayload(buf, 12)
	if !bytes.Equal(buf, make([]byte, 24)) {
		t.Fatalf("write_lat's buffer: % x, want zeroes", buf)
	}
}

// FuzzParsePayload: any text gives a payload of 1..limit bytes or an
// error, never a panic.
func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{"0xaabbccdd,0x11223344\n", "0x", ",,,", "0xAABBCCDD , 0X1122334g", "\x00\xff0xaabbccdd"} {
		f.Add([]byte(s), uint16(64))
	}
	f.Fuzz(func(t *testing.T, text []byte, limit uint16) {
		p, err := ParsePayload(text, uint64(limit)+1)
		if err == nil && (len(p) == 0 || len(p) > int(limit)+1) {
			t.Fatalf("%q: %d bytes for limit %d", text, len(p), int(limit)+1)
		}
	})
}

// A send with a payload keeps it (the SRQ check pattern is not written
// over it), and an rdmactl SRQ receiver, told so by the parameter record,
// checks nothing instead of failing on it.
func TestSessionPayloadSRQReceiver(t *testing.T) {
	for _, payload := range [][]byte{nil, {1, 2, 3, 4}} {
		srv := Params{Verb: VerbSend, Test: TestBW, Iters: 50, UseSRQ: true}
		cli := Params{Verb: VerbSend, Test: TestBW, Iters: 50, Payload: payload}
		s, c, _ := runPair(t, srv, cli)
		if s.err != nil || c.err != nil {
			t.Fatalf("payload %v: server: %v client: %v", payload, s.err, c.err)
		}
		if got := s.res.SRQ.PayloadChecked; got != (payload == nil) {
			t.Errorf("payload %v: the SRQ receiver checked the bytes: %v", payload, got)
		}
	}
}
