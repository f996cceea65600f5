package perf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maxPayloadFile bounds what --payload_file_path reads: 64 MiB of text is
// far more than the largest message (8 MiB, 11 characters a 4-byte word).
const maxPayloadFile = 64 << 20

// ParsePayload reads perftest's payload text (--payload_file_path):
// 32-bit words written as "0xaabbccdd", separated by commas (and line
// ends), each stored little endian (dd cc bb aa), up to limit bytes, as
// perftest 6.29's create_payload (src/perftest_resources.c). Blanks around
// a word are allowed; any other word is refused, naming its number.
func ParsePayload(text []byte, limit uint64) ([]byte, error) {
	var out []byte
	words := strings.FieldsFunc(string(text), func(r rune) bool { return r == ',' || r == '\n' || r == '\r' })
	for i, w := range words {
		if uint64(len(out)) >= limit {
			break
		}
		w = strings.TrimSpace(w)
		if len(w) != 10 || w[0] != '0' || w[1] != 'x' && w[1] != 'X' {
			return nil, fmt.Errorf("word %d is %.16q; want 0x and 8 hex digits, such as 0xaabbccdd", i, w)
		}
		var b [4]byte
		for k := 0; k < 4; k++ {
			hi, ok1 := unhex(w[8-2*k])
			lo, ok2 := unhex(w[9-2*k])
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("word %d (%s) has a character that is not a hex digit", i, w)
			}
			b[k] = hi<<4 | lo
		}
		out = append(out, b[:min(uint64(4), limit-uint64(len(out)))]...)
	}
	if len(out) == 0 {
		return nil, errors.New("no words in it; want words such as 0xaabbccdd,0x11223344")
	}
	return out, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// LoadPayload reads and parses a payload file into p.Payload, for the
// run's largest message (p.Size, or 8 MiB with -a). Only a regular file
// is read (a FIFO or a device would block or never end), and at most
// maxPayloadFile bytes of it.
func (p *Params) LoadPayload(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > maxPayloadFile {
		return fmt.Errorf("%s is %d bytes; a payload file has at most %d", path, st.Size(), maxPayloadFile)
	}
	text, err := io.ReadAll(io.LimitReader(f, maxPayloadFile))
	if err != nil {
		return err
	}
	if p.Payload, err = ParsePayload(text, p.maxSize()); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// fillPayload repeats the payload through each block of the buffer (every
// QP's source and target area starts a block), so that every message
// starts with the payload's first byte. perftest fills its whole buffer
// the same way (initialize_buffer_content), except in write_lat, whose
// receiver polls its buffer for the last byte: there it stays zeroed.
func (p *Params) fillPayload(buf []byte, blk uint64) {
	if len(p.Payload) == 0 || p.Verb == VerbWrite && p.Test == TestLat {
		return
	}
	for off := uint64(0); off < uint64(len(buf)); off += blk {
		b := buf[off:min(off+blk, uint64(len(buf)))]
		for k := range b {
			b[k] = p.Payload[k%len(p.Payload)]
		}
	}
}
