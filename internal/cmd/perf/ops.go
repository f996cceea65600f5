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
}

// addPerfOpsFlags adds the flags of verb's tests that only some have.
func addPerfOpsFlags(fs *pflag.FlagSet, f *perfFlags, verb perf.Verb) {
	switch verb {
	case perf.VerbAtomic:
		fs.StringVarP(&f.ops.atomic, "atomic_type", "A", "FETCH_AND_ADD", "atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (8 bytes; perftest's operands: add 1, or compare 0 and swap 0)")
	case perf.VerbSend:
		fs.BoolVar(&f.p.UseSRQ, "use-srq", false, "receive through one shared receive queue (SRQ) for all QPs, as perftest's --use-srq")
		fs.BoolVar(&f.p.SendImm, "send_with_imm", false, "send with immediate data, and as a receiver require it (perftest 6.29's SEND_IMM; give it on both sides)")
	case perf.VerbWrite:
		fs.BoolVar(&f.p.WriteImm, "write_with_imm", false, "write with immediate data, so the receiver posts receives and completes each message (perftest 6.29's WRITE_IMM; both sides, rdmactl peers only)")
	}
}

// parsePerfOpsFlags moves them into f.p.
func parsePerfOpsFlags(f *perfFlags) error {
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
