package perf

import (
	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// perf atomic's -A and the send tests' --use-srq (internal/perf atomic.go
// and srq.go), kept apart from perf.go's flag list: perftest's letters and
// defaults.

type perfOpsFlags struct {
	atomic string
	mgid   string // -M
}

// addPerfOpsFlags adds the flags of verb's tests that only some have.
func addPerfOpsFlags(fs *pflag.FlagSet, f *perfFlags, verb perf.Verb) {
	switch verb {
	case perf.VerbAtomic:
		fs.StringVarP(&f.ops.atomic, "atomic_type", "A", "FETCH_AND_ADD", "atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (8 bytes; perftest's operands: add 1, or compare 0 and swap 0)")
	case perf.VerbSend:
		fs.BoolVar(&f.p.UseSRQ, "use-srq", false, "receive through one shared receive queue (SRQ) for all QPs, as perftest's --use-srq")
		fs.BoolVar(&f.p.SendImm, "send_with_imm", false, "send with immediate data, and as a receiver require it (perftest 6.29's SEND_IMM; give it on both sides)")
		fs.BoolVarP(&f.p.Mcast, "mcg", "g", false, "multicast (RoCE, UD, one QP): the server's QP joins a group and the client sends to it; with --lat both join, as perftest. Without -x: GID index 0, as perftest")
		fs.StringVarP(&f.ops.mgid, "MGID", "M", "", "with -g: the group's GID, as perftest's 16 colon-separated bytes or an IPv6 address (default ff01:0:0:2:c985::, the client's own one higher; on rxe only groups the netdev has joined reach the receiver, such as ff02::1 with -x 0)")
		fs.BoolVar(&f.p.Connectionless, "connectionless", false, "with -g and --run_infinitely, no server address: receive the group's traffic with no exchange and no peer, reporting each period until Ctrl-C (perftest 6.29's)")
	case perf.VerbWrite:
		fs.BoolVar(&f.p.WriteImm, "write_with_imm", false, "write with immediate data, so the receiver posts receives and completes each message (perftest 6.29's WRITE_IMM; both sides, rdmactl peers only)")
	}
	if verb == perf.VerbWrite || verb == perf.VerbRead {
		fs.BoolVar(&f.p.DataValidation, "data_validation", false, "bandwidth over RC: the side that receives the data (write: the server; read: the client; -b: both) checks every byte while the run goes on, and prints VALIDATION: PASSED or fails with exit 6 (perftest 6.29's; both sides)")
		fs.BoolVar(&f.p.DataValidationDebug, "data_validation_debug", false, "with --data_validation: print the ring's layout and the validators' figures (perftest 6.29's)")
	}
}

// parsePerfOpsFlags moves them into f.p.
func parsePerfOpsFlags(f *perfFlags) error {
	if f.ops.mgid != "" {
		g, err := perf.ParseMGID(f.ops.mgid)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		f.p.MGID, f.p.UserMGID = g, true
	}
	if f.p.Mcast {
		// perftest runs multicast on UD whatever -c says, and with GID
		// index 0 when -x is not given (src/perftest_parameters.c).
		f.p.Conn = perf.UD
		if !f.p.UserGID {
			f.p.UserGID, f.p.GIDIndex = true, 0
		}
	}
	if f.ops.atomic == "" {
		return nil
	}
	op, err := perf.ParseAtomicOp(f.ops.atomic)
	if err != nil {
		return cmdutil.UsageErrorf("-A: %v", err)
	}
	f.p.Atomic = op
	return nil
}
