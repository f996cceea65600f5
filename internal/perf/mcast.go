package perf

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Multicast runs (perftest's -g, send tests only): the server's QPs
// attach to a multicast group and the client sends to it, on UD; in a
// latency run both sides attach, each to its own group, and send to the
// other's (src/send_bw.c and src/send_lat.c, send_set_up_connection).
// The exchanged record names the group: its GID, LID 0 on RoCE (perftest
// joins through the subnet administrator only on InfiniBand, where the SA
// assigns the MLID) and QPN 0xffffff (QPNUM_MCAST).

// mcastQPN is the QPN of a multicast destination (QPNUM_MCAST,
// perftest's src/multicast_resources.h).
const mcastQPN = 0xffffff

// defaultMGID is perftest's MCG_GID (src/multicast_resources.h),
// ff01:0:0:2:c985::; a client without -M uses it with its last byte one
// higher (set_multicast_gid).
var defaultMGID = [16]byte{255, 1, 0, 0, 0, 2, 201, 133}

// McastDevice is a Device whose QPs can join a multicast group
// (ATTACH_MCAST); the group is left when the QP is destroyed.
type McastDevice interface {
	AttachMcast(i int, gid [16]byte, mlid uint16) error
}

// RefusedError is an option rdmactl perf deliberately does not run in
// this setting (exit 2), found once the port is known.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// ParseMGID parses -M: perftest's form, the 16 bytes as numbers
// separated by colons (each as C's strtoll with base 0: 255, 0xff, 0377),
// or an IPv6 address ("ff02::1"). The group must be a multicast GID
// (ff00::/8).
func ParseMGID(s string) ([16]byte, error) {
	var g [16]byte
	if parts := strings.Split(s, ":"); len(parts) == 16 {
		ok := true
		for i, p := range parts {
			n, err := strconv.ParseUint(p, 0, 8)
			if err != nil {
				ok = false
				break
			}
			g[i] = byte(n)
		}
		if ok {
			return g, checkMGID(s, g)
		}
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return g, fmt.Errorf("-M %q: a multicast GID, as 16 colon-separated bytes (perftest's form, 255:2:0:0:0:0:0:0:0:0:0:0:0:0:0:1) or an IPv6 address (ff02::1)", s)
	}
	g = a.As16()
	return g, checkMGID(s, g)
}

func checkMGID(s string, g [16]byte) error {
	if g[0] != 0xff {
		return fmt.Errorf("-M %q: not a multicast GID (they begin with byte 255, ff00::/8)", s)
	}
	return nil
}

// joinsGroup says whether this side's QPs join a multicast group: where
// it receives multicast, the server and both sides of a latency run.
func (p *Params) joinsGroup() bool {
	return p.Mcast && (p.Server || p.Test == TestLat)
}

// mgid is the group this side attaches to.
func (p *Params) mgid() [16]byte {
	if p.UserMGID {
		return p.MGID
	}
	g := defaultMGID
	if !p.Server {
		g[15]++
	}
	return g
}

// validateMcast is perftest's checks of -g and --connectionless
// (src/perftest_parameters.c).
func (p *Params) validateMcast() error {
	switch {
	case p.Connectionless && (!p.Server || !p.Mcast || p.Test != TestBW || p.Conn != UD || !p.RunInfinitely):
		return errors.New("--connectionless: a receiver of a multicast send bandwidth run, so without a server address, with -g and --run_infinitely (as perftest 6.29)")
	case !p.Mcast:
		return nil
	case p.Verb != VerbSend:
		return errors.New("-g: multicast runs are send tests only (as perftest)")
	case p.Conn != UD:
		return errors.New("-g: multicast runs on UD (-c UD)")
	case p.Bidir:
		return errors.New("-g with -b: a multicast run is one-way (perftest: Bidirectional mode not supported in multicast)")
	case p.QPs > 1:
		return fmt.Errorf("-g with -q %d: a multicast run uses one QP (as perftest)", p.QPs)
	case p.RDMACM || p.CommCM:
		return errors.New("-g with -R or -z: perftest does not run multicast over the RDMA CM, nor does rdmactl")
	case p.Reversed:
		return errors.New("-g with --reversed: rdmactl does not swap the roles of a multicast run (the server's side receives)")
	case p.UseSRQ:
		return errors.New("-g with --use-srq: this data path has SRQ for RC and UC QPs only")
	}
	return nil
}

// joinMcast attaches this side's QPs to its group and makes its records
// name the group, where it joins one (joinsGroup).
func (s *Session) joinMcast() error {
	p := s.P
	if !p.joinsGroup() {
		return nil
	}
	md, ok := s.Dev.(McastDevice)
	if !ok {
		return errors.New("-g: this device cannot attach QPs to a multicast group")
	}
	g := p.mgid()
	for i := range s.my {
		if err := md.AttachMcast(i, g, 0); err != nil {
			return fmt.Errorf("-g: %w", err)
		}
		s.my[i].GID, s.my[i].LID, s.my[i].QPN = g, 0, mcastQPN
	}
	return nil
}

// checkMcastLink refuses a multicast run on InfiniBand: there the group
// must be joined through the subnet administrator (perftest's
// join_multicast_group, a MAD over umad), which rdmactl does not send.
func (s *Session) checkMcastLink() error {
	if s.P.Mcast && s.port.LinkLayer != vocab.LinkLayerEthernet {
		return &RefusedError{errors.New("-g on InfiniBand: the multicast group must be joined through the subnet administrator (perftest sends the SA a MAD over umad), which rdmactl perf does not do; multicast runs are RoCE only")}
	}
	return nil
}

// mgidLabel says whether writeAddr labels side's record "MGID": the
// record that names a group, as ctx_print_pingpong_data decides
// (src/perftest_communication.c): the server's own, the client's peer's.
func mgidLabel(p *Params, side string) bool {
	return p.Mcast && (side == "local") == p.Server
}

// Connectionless is perftest 6.29's --connectionless server
// (src/send_bw.c): it joins the group and receives what any sender sends
// to it, with no exchange, so no peer: its MTU and buffer are its own,
// its header has no remote address, and it reports each
// --run_infinitely period until Ctrl-C. Senders are multicast runs of
// their own (a -g client and its server) on the same group.

// listenOnly sets what the exchange would have: the cycle buffer and
// the MTU are this side's own.
func (s *Session) listenOnly() {
	s.cycle = int32(os.Getpagesize())
	s.mtu = s.ownMTU()
}

// seqListen is the --connectionless receiver's run: its UD QP goes to
// RTS with no peer (a UD QP's RTR and RTS name none) and no address
// handle, as it never sends.
func (s *Session) seqListen(ctx context.Context) error {
	for i := range s.my {
		if err := s.Dev.Connect(i, ConnectConfig{MTU: s.mtu, GIDIndex: s.gidIndex, Local: s.my[i], QKey: udQKey}); err != nil {
			return err
		}
	}
	s.header()
	r := s.newRunner()
	r.prepare(s.P.Size)
	if err := r.postRecvs(1 << 62); err != nil {
		return err
	}
	return s.runInfinitely(ctx, r, r.runBWRecv)
}
