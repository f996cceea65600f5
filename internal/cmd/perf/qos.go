package perf

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// perf's QoS and path options and its thresholds, with perftest's
// letters (perftest_parameters.c): registered and applied here, apart
// from perf.go's other flags.

// qosFlags holds what needs parsing after pflag (the rest goes straight
// into perf.Params).
type qosFlags struct {
	tclass, tos int
	flowLabel   string
	slIgnored   bool // -S given with -R
}

func addQoSFlags(fs *pflag.FlagSet, f *perfFlags) {
	q, l := &f.p.QoS, &f.p.Limits
	fs.Uint8VarP(&q.SL, "sl", "S", 0, "service level 0..15 (InfiniBand LRH; not carried by RoCE without VLANs)")
	fs.IntVar(&f.qos.tclass, "tclass", 0, "GRH traffic class 0..255 (RoCE v2: the IP DSCP<<2|ECN byte, e.g. 104 = DSCP 26)")
	fs.IntVarP(&f.qos.tos, "tos", "T", 0, "type of service 0..255: with -R the CM's RDMA_OPTION_ID_TOS (as perftest), without it the same as --tclass")
	fs.StringVar(&f.qos.flowLabel, "flow_label", "", "GRH flow labels (20 bits), one per QP in turn: FL0,FL1,...")
	fs.Uint8VarP(&q.Timeout, "qp-timeout", "u", 14, "RC retransmit timeout 0..31: 4.096 usec * 2^N (0: none)")
	fs.Uint8Var(&q.RetryCnt, "retry_count", 7, "RC transport retries 0..7")
	fs.IntVar(&q.PKeyIndex, "pkey_index", 0, "P_Key table index of the QPs")
	fs.IntVar(&f.p.DLID, "dlid", 0, "connect to this destination LID instead of the one the peer sends (InfiniBand; a RoCE port routes by GID and ignores it), as perftest")
	fs.VarP((*strtofValue)(&l.BW), "limit_bw", "w", "fail (exit 7) when the BW average is below this (the report's unit: MiB/s, or Gb/s with --report_gbits)")
	fs.VarP((*strtofValue)(&l.MsgRate), "limit_msgrate", "y", "fail (exit 7) when the message rate is below this (Mpps)")
	fs.Float64Var(&l.Lat, "limit_lat", 0, "--lat: fail (exit 7) when the median latency exceeds this (usec)")
	fs.Float64Var(&l.LatPct, "limit_lat_pct", 50, "the percentile --limit_lat applies to: 50, 99 or 99.9")
}

// applyQoSFlags turns what pflag could not into Params (ranges are
// checked by Params.Validate).
func applyQoSFlags(f *perfFlags) error {
	q, fs := &f.p.QoS, f.fs
	q.TClass, q.TOS = -1, -1
	if fs.Changed("tclass") {
		if f.qos.tclass < 0 {
			return cmdutil.UsageErrorf("--tclass %d: traffic class must be 0..255", f.qos.tclass)
		}
		q.TClass = f.qos.tclass
	}
	if fs.Changed("tos") {
		if f.qos.tos < 0 {
			return cmdutil.UsageErrorf("-T %d: TOS must be 0..255", f.qos.tos)
		}
		q.TOS = f.qos.tos
	}
	q.UserTimeout = fs.Changed("qp-timeout")
	q.UserRetry = fs.Changed("retry_count")
	if !fs.Changed("limit_lat_pct") {
		f.p.Limits.LatPct = 0 // the median
	}
	if f.p.RDMACM && q.SL != 0 && q.SL <= 15 {
		// The CM moves the QPs to RTR with the path it resolved, whose SL
		// perftest leaves alone: it takes -S with -R and ignores it.
		q.SL, f.qos.slIgnored = 0, true
	}
	if fs.Changed("flow_label") {
		var err error
		if q.FlowLabels, err = perf.ParseFlowLabels(f.qos.flowLabel); err != nil {
			return cmdutil.UsageErrorf("--flow_label: %v", err)
		}
	}
	return nil
}

// strtofValue is a limit read as perftest reads -w and -y: strtof with
// no end pointer (src/perftest_parameters.c), so the number that starts
// the argument counts and what follows it does not ("100M" is 100, as
// public test suites write it; "M" is no multiplier). A negative limit is
// refused, as perftest refuses it.
type strtofValue float64

func (v *strtofValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *strtofValue) Type() string   { return "float" }

func (v *strtofValue) Set(s string) error {
	// strtof reads "nan" and "inf" too; a limit that is not a finite
	// number is a typing error here, refused rather than never failing.
	if t := strings.ToLower(strings.TrimLeft(s, " \t\n\v\f\r+-")); strings.HasPrefix(t, "nan") || strings.HasPrefix(t, "inf") {
		return fmt.Errorf("%s: a limit must be a finite number", s)
	}
	f := leadingFloat(s)
	if math.IsInf(f, 0) {
		return fmt.Errorf("%s: a limit must be a finite number", s)
	}
	if f < 0 {
		return fmt.Errorf("%s: a limit must not be negative", s)
	}
	*v = strtofValue(f)
	return nil
}

// leadingFloatRE is the decimal number strtof(3) reads at the start of a
// string, after white space; nothing matched reads as 0.
var leadingFloatRE = regexp.MustCompile(`^[ \t\n\v\f\r]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`)

func leadingFloat(s string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimLeft(leadingFloatRE.FindString(s), " \t\n\v\f\r"), 64)
	return f
}
