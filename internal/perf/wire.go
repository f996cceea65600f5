package perf

// The records of perftest's out-of-band TCP exchange (perftest
// src/perftest_communication.c at tag v4.5-0.17, exchange version 6.06,
// and later). There is no framing: every record has a fixed size that
// both sides know from the test and the peer's version, so a peer reads each
// record with one read() of exactly that size. Everything read here is
// validated byte by byte before use: a garbled record is an error naming
// the record, never a wrong number.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Record sizes.
const (
	versionSize = 16  // MAX_VERSION: ASCII, NUL padded
	keySizeLID  = 59  // KEY_MSG_SIZE: "%04x:%04x:%06x:%06x:%08x:%016llx:%08x" + NUL
	keySizeGID  = 108 // KEY_MSG_SIZE_GID: the same with 16 GID bytes and a trailing ':'
	// With --data_validation (perftest 6.29's KEY_MSG_SIZE_DV and
	// KEY_MSG_SIZE_GID_DV) the records carry the tail markers' address,
	// "%016llx:", after vaddr.
	keySizeDV = 17
	mtuSize   = 2 // enum ibv_mtu as one ASCII digit + NUL (peers >= 5.31)
	doneSize  = 5 // "done\0", written by ctx_close_connection after the last key round
)

// OurVersion is what we claim in the version record. perftest peers >= 6.28
// exchange a build-dependent negotiation struct only with peers that claim
// >= 6.28, so we claim 6.27 (the newest version without it); the suffix
// lets two rdmactl peers recognise each other, and atof() in perftest
// reads only the number.
const OurVersion = "6.27 rdmactl"

// minPeerVersion is the oldest exchange perftest itself still accepts
// (check_version_compatibility).
const minPeerVersion = 5.70

// Version is a parsed version record.
type Version struct {
	Text    string  // as sent, without the NUL padding
	Number  float64 // what perftest's atof() makes of it
	Rdmactl bool    // the peer is rdmactl (our suffix)
}

func encodeVersion(v string) []byte {
	b := make([]byte, versionSize)
	copy(b[:versionSize-1], v)
	return b
}

// parseVersion validates a 16-byte version record: printable ASCII up to a
// NUL, the rest NUL (perftest strcpy()s into a zeroed buffer, but older
// builds may leave garbage after the NUL, so only the part before the first
// NUL must be clean), a leading decimal number >= 5.70.
func parseVersion(b []byte) (Version, error) {
	if len(b) != versionSize {
		return Version{}, fmt.Errorf("version record is %d bytes, want %d", len(b), versionSize)
	}
	n := bytes.IndexByte(b, 0)
	if n < 0 {
		return Version{}, errors.New("version record has no NUL terminator")
	}
	s := string(b[:n])
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return Version{}, fmt.Errorf("version record has a non-printable byte 0x%02x", s[i])
		}
	}
	// The leading number: digits, one optional dot, digits.
	end, dot := 0, false
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.' && !dot) {
		if s[end] == '.' {
			dot = true
		}
		end++
	}
	if end == 0 {
		return Version{}, fmt.Errorf("version record %q does not start with a number", s)
	}
	num, err := strconv.ParseFloat(s[:end], 64)
	if err != nil {
		return Version{}, fmt.Errorf("version record %q: %v", s, err)
	}
	v := Version{Text: s, Number: num, Rdmactl: s[end:] == " rdmactl"}
	if num < minPeerVersion {
		return v, fmt.Errorf("peer speaks perftest exchange version %q; rdmactl needs >= 5.70 (as perftest does)", s)
	}
	return v, nil
}

// encodeInt32 / parseInt32 are the two "system data" records (cycle buffer
// = page size, cache line size): big-endian int32.
func encodeInt32(v int32) []byte {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(v))
	return b
}

// parseSysValue validates a cycle-buffer or cache-line record: a power of
// two within [lo, hi].
func parseSysValue(name string, b []byte, lo, hi int32) (int32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("%s record is %d bytes, want 4", name, len(b))
	}
	v := int32(binary.BigEndian.Uint32(b))
	if v < lo || v > hi || v&(v-1) != 0 {
		return 0, fmt.Errorf("peer sent %s %d; want a power of two in [%d, %d]", name, v, lo, hi)
	}
	return v, nil
}

// The MTU record is the enum ib_mtu digit (vocab.MTU, '1' = 256 ... '5'
// = 4096) and a NUL; '0' for a size that is no MTU.
func encodeMTU(mtu int) []byte {
	m, _ := vocab.MTUFromBytes(mtu)
	return []byte{byte('0' + m), 0}
}

func parseMTU(b []byte) (int, error) {
	if len(b) != mtuSize || b[0] < '1' || b[0] > '5' || b[1] != 0 {
		return 0, fmt.Errorf("peer sent MTU record %q; want one digit 1-5 and a NUL", b)
	}
	return int(vocab.MTU(b[0] - '0').Bytes()), nil
}

// validMTU reports whether bytes is one of the five IB MTUs.
func validMTU(bytes int) bool {
	_, ok := vocab.MTUFromBytes(bytes)
	return ok
}

// Dest is one side's key record: what the peer needs to reach a QP.
type Dest struct {
	LID      uint16
	OutReads uint16 // RDMA READ depth the peer may use as max_rd_atomic
	QPN      uint32 // 24 bits
	PSN      uint32 // 24 bits
	RKey     uint32
	VAddr    uint64 // remote target area of this QP
	GID      [16]byte
	SRQN     uint32
	// TailMarkers is the address of the tail markers of a
	// --data_validation run (validation.go); only its records carry it.
	TailMarkers uint64
}

// keyForm is which key record both sides exchange: the GID form iff the
// writer's own gid_index != -1 (both sides must agree), with the tail
// markers' address iff --data_validation.
type keyForm struct{ gid, dv bool }

// encodeKey builds the key record of form f.
func encodeKey(d *Dest, f keyForm) []byte {
	s := fmt.Sprintf("%04x:%04x:%06x:%06x:%08x:%016x:", d.LID, d.OutReads, d.QPN&0xffffff, d.PSN&0xffffff, d.RKey, d.VAddr)
	if f.dv {
		s += fmt.Sprintf("%016x:", d.TailMarkers)
	}
	if f.gid {
		g := d.GID
		s += fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:",
			g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], d.SRQN)
	} else {
		s += fmt.Sprintf("%08x", d.SRQN)
	}
	b := make([]byte, keySize(f))
	copy(b, s)
	return b
}

func keySize(f keyForm) int {
	n := keySizeLID
	if f.gid {
		n = keySizeGID
	}
	if f.dv {
		n += keySizeDV
	}
	return n
}

// keyField widths, in record order (GID bytes are handled separately).
var keyWidths = [...]int{4, 4, 6, 6, 8, 16}

// parseKey validates and decodes a key record. Every field must be exactly
// its printf width of lower- or upper-case hex digits, separated by ':',
// followed by the terminating NUL. perftest's own reader (sscanf/strtol) is
// laxer; being strict costs nothing since every perftest writes exactly
// this format.
func parseKey(b []byte, f keyForm) (Dest, error) {
	var d Dest
	withGID := f.gid
	want := keySize(f)
	if len(b) != want {
		return d, fmt.Errorf("key record is %d bytes, want %d", len(b), want)
	}
	if b[want-1] != 0 {
		return d, errors.New("key record is not NUL-terminated (LID/GID form mismatch? both sides must use a GID on RoCE, or both pass -x)")
	}
	p := 0
	field := func(name string, width int) (uint64, error) {
		if p+width > len(b) {
			return 0, fmt.Errorf("key record too short at %s", name)
		}
		var v uint64
		for i := 0; i < width; i++ {
			c := b[p+i]
			var x byte
			switch {
			case c >= '0' && c <= '9':
				x = c - '0'
			case c >= 'a' && c <= 'f':
				x = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				x = c - 'A' + 10
			default:
				return 0, fmt.Errorf("key record field %s has non-hex byte 0x%02x at offset %d (LID/GID form mismatch?)", name, c, p+i)
			}
			v = v<<4 | uint64(x)
		}
		p += width
		return v, nil
	}
	colon := func(name string) error {
		if p >= len(b) || b[p] != ':' {
			return fmt.Errorf("key record: want ':' after %s at offset %d", name, p)
		}
		p++
		return nil
	}
	names := [...]string{"lid", "out_reads", "qpn", "psn", "rkey", "vaddr"}
	var vals [6]uint64
	for i, w := range keyWidths {
		v, err := field(names[i], w)
		if err != nil {
			return d, err
		}
		vals[i] = v
		if err := colon(names[i]); err != nil {
			return d, err
		}
	}
	d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr = uint16(vals[0]), uint16(vals[1]), uint32(vals[2]), uint32(vals[3]), uint32(vals[4]), vals[5]
	if f.dv {
		v, err := field("tail_markers_vaddr", 16)
		if err != nil {
			return d, err
		}
		if err := colon("tail_markers_vaddr"); err != nil {
			return d, err
		}
		d.TailMarkers = v
	}
	if withGID {
		for i := 0; i < 16; i++ {
			v, err := field("gid", 2)
			if err != nil {
				return d, err
			}
			d.GID[i] = byte(v)
			if err := colon("gid"); err != nil {
				return d, err
			}
		}
	}
	v, err := field("srqn", 8)
	if err != nil {
		return d, err
	}
	d.SRQN = uint32(v)
	if withGID {
		if err := colon("srqn"); err != nil {
			return d, err
		}
	}
	if p != want-1 {
		return d, fmt.Errorf("key record has %d unexpected bytes before the NUL", want-1-p)
	}
	if d.QPN == 0 {
		return d, errors.New("key record names QP number 0")
	}
	return d, nil
}

// BWReport is perftest's struct bw_report_data as exchanged by
// xchg_bw_reports: the peer's own numbers, in the unit it reports in.
type BWReport struct {
	Size    uint64
	Iters   uint64
	BWPeak  float64
	BWAvg   float64
	MsgRate float64 // Mpps
}

// The five report fields travel as separate round trips: size and iters as
// 8-byte big-endian integers (iters 4 bytes for peers < 5.33, which we
// refuse anyway), doubles byte-swapped to big-endian.
func encodeU64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func encodeF64(v float64) []byte { return encodeU64(math.Float64bits(v)) }

func parseU64(name string, b []byte, max uint64) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("report field %s is %d bytes, want 8", name, len(b))
	}
	v := binary.BigEndian.Uint64(b)
	if v > max {
		return 0, fmt.Errorf("peer reported %s %d, out of range (max %d)", name, v, max)
	}
	return v, nil
}

func parseF64(name string, b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("report field %s is %d bytes, want 8", name, len(b))
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(b))
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e12 {
		return 0, fmt.Errorf("peer reported %s %v, not a plausible figure", name, v)
	}
	return v, nil
}

// maxMsgSize is perftest's MAX_SIZE for -a and a sane bound for -s.
const maxMsgSize = 1 << 30

// parseBWReport decodes the five fields (for the fuzzer and tests; the
// session exchanges them one by one).
func parseBWReport(f [5][]byte) (BWReport, error) {
	var r BWReport
	var err error
	if r.Size, err = parseU64("size", f[0], maxMsgSize); err != nil {
		return r, err
	}
	if r.Iters, err = parseU64("iterations", f[1], 1<<48); err != nil {
		return r, err
	}
	if r.BWPeak, err = parseF64("bw_peak", f[2]); err != nil {
		return r, err
	}
	if r.BWAvg, err = parseF64("bw_avg", f[3]); err != nil {
		return r, err
	}
	if r.MsgRate, err = parseF64("msg_rate", f[4]); err != nil {
		return r, err
	}
	return r, nil
}

// isIPv4Mapped reports whether a GID is ::ffff:a.b.c.d (perftest's
// ipv6_addr_v4mapped, used by ctx_check_gid_compatibility).
func isIPv4Mapped(g [16]byte) bool {
	for i := 0; i < 10; i++ {
		if g[i] != 0 {
			return false
		}
	}
	return g[10] == 0xff && g[11] == 0xff
}
