package perf

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// QoS and path options, as perftest's (perftest_parameters.c): they go
// into the QPs' MODIFY_QP attributes and the UD address handles
// (ctx_modify_qp_to_rtr/rts), never onto perftest's TCP exchange: each
// side's values apply to what that side sends (requests, and the ACKs
// and READ responses its QPs return), so the two sides may differ.
type QoS struct {
	// SL is the service level (-S, 0..15; perftest's DEF_SL 0). RoCE
	// without VLANs does not carry it; InfiniBand does, in the LRH.
	SL uint8
	// TClass is the GRH traffic class (--tclass; on RoCE v2 the IP
	// header's DSCP<<2|ECN byte), -1 when not given.
	TClass int
	// TOS is -T (0..255, -1 when not given). perftest takes it only with
	// rdma_cm (-R), where rdma_set_option(RDMA_OPTION_ID_TOS) makes the
	// CM put it in the path's traffic class; without -R rdmactl applies
	// it as that traffic class itself (perftest refuses -T there).
	TOS int
	// FlowLabels are --flow_label's values (20 bits), one per QP in turn
	// (perftest's round robin); none: 0.
	FlowLabels []uint32
	// Timeout is the RC retransmit timeout exponent (-u: 4.096 us *
	// 2^Timeout, 0 disables it; 0..31), with UserTimeout; else 14.
	Timeout     uint8
	UserTimeout bool
	// RetryCnt is the RC transport retry count (--retry_count, 0..7),
	// with UserRetry; else 7. perftest uses it only for rdma_cm's
	// conn_param and always sets 7 on the QP without -R; rdmactl sets it
	// on the QP either way.
	RetryCnt  uint8
	UserRetry bool
	// PKeyIndex is the QP's P_Key table index (--pkey_index); it must
	// be below the port's table length.
	PKeyIndex int
}

// Defaults of the QoS options (perftest's DEF_QP_TIME, DEF_RETRY_COUNT).
const (
	defQPTimeout  = 14
	defRetryCount = 7
	maxFlowLabel  = 1<<20 - 1
)

// NoQoS is the QoS of a run without QoS options (the flags' defaults).
func NoQoS() QoS { return QoS{TClass: -1, TOS: -1} }

// TrafficClass is the GRH traffic class the QPs and AHs get: --tclass,
// else -T, else 0.
func (q *QoS) TrafficClass() uint8 {
	switch {
	case q.TClass >= 0:
		return uint8(q.TClass)
	case q.TOS >= 0:
		return uint8(q.TOS)
	}
	return 0
}

// QPTimeout is the RTS timeout: -u, else perftest's 14.
func (q *QoS) QPTimeout() uint8 {
	if q.UserTimeout {
		return q.Timeout
	}
	return defQPTimeout
}

// RetryCount is the RTS retry count: --retry_count, else 7.
func (q *QoS) RetryCount() uint8 {
	if q.UserRetry {
		return q.RetryCnt
	}
	return defRetryCount
}

// FlowLabel is QP i's flow label (round robin over --flow_label).
func (q *QoS) FlowLabel(i int) uint32 {
	if len(q.FlowLabels) == 0 {
		return 0
	}
	return q.FlowLabels[i%len(q.FlowLabels)]
}

// validate checks the ranges with one line naming the option. The zero
// QoS (a Params built in code) is valid: TClass and TOS 0.
func (q *QoS) validate() error {
	switch {
	case q.SL > 15:
		return fmt.Errorf("-S %d: service level must be 0..15", q.SL)
	case q.TClass > 255 || q.TClass < -1:
		return fmt.Errorf("--tclass %d: traffic class must be 0..255", q.TClass)
	case q.TOS > 255 || q.TOS < -1:
		return fmt.Errorf("-T %d: TOS must be 0..255", q.TOS)
	case q.TClass >= 0 && q.TOS >= 0 && q.TClass != q.TOS:
		return fmt.Errorf("--tclass %d and -T %d disagree: both set the traffic class; give one", q.TClass, q.TOS)
	case q.UserTimeout && q.Timeout > 31:
		return fmt.Errorf("-u %d: QP timeout must be 0..31 (4.096 us * 2^N; 0: no retransmit timer)", q.Timeout)
	case q.UserRetry && q.RetryCnt > 7:
		return fmt.Errorf("--retry_count %d: retry count must be 0..7", q.RetryCnt)
	case q.PKeyIndex < 0 || q.PKeyIndex > 0xffff:
		return fmt.Errorf("--pkey_index %d: P_Key index must be 0..65535 and below the port's table length", q.PKeyIndex)
	}
	for _, l := range q.FlowLabels {
		if l > maxFlowLabel {
			return fmt.Errorf("--flow_label %d: flow labels are 20 bits (0..%d)", l, maxFlowLabel)
		}
	}
	return nil
}

// given reports whether any QoS option asks for something other than
// the defaults (a QoS built in code has TClass and TOS 0, the default).
func (q *QoS) given() bool {
	return q.SL != 0 || q.TClass > 0 || q.TOS > 0 || len(q.FlowLabels) > 0 || q.UserTimeout || q.UserRetry || q.PKeyIndex != 0
}

// validateCM refuses, with -R, the options the RDMA CM cannot carry: the
// CM moves the data QPs through INIT, RTR and RTS with the path it
// resolved (cm_session.go), and perftest ignores these there. -T (the
// path's TOS), -u (RDMA_OPTION_ID_ACK_TIMEOUT) and --retry_count (the
// connection parameters) are applied (cmQoS); -S never gets here: the
// command line takes it with -R and drops it, as perftest does.
func (q *QoS) validateCM() error {
	var bad []string
	if q.TClass >= 0 && q.TOS < 0 {
		bad = append(bad, "--tclass (use -T)")
	}
	if len(q.FlowLabels) > 0 {
		bad = append(bad, "--flow_label")
	}
	if q.PKeyIndex != 0 {
		bad = append(bad, "--pkey_index")
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("-R: the RDMA CM chooses the path's traffic class, flow label and P_Key (perftest ignores them with -R): %s not supported with -R; -T, -u and --retry_count are", strings.Join(bad, ", "))
}

// cmQoS is what the CM path applies of the QoS options: TOS (-1: none)
// set on the ids, the ACK timeout (-1: the CM's own), and the connection
// parameters' retry counts (perftest: both --retry_count, default 7).
type cmQoS struct {
	TOS        int
	AckTimeout int
	Retry      uint8
}

func (q *QoS) cm() cmQoS {
	c := cmQoS{TOS: q.TOS, AckTimeout: -1, Retry: q.RetryCount()}
	if q.TClass >= 0 {
		c.TOS = q.TClass // validate made them agree
	}
	if q.TClass == 0 && q.TOS == 0 {
		// The zero QoS of a Params built in code: leave the CM's
		// default TOS (configfs default_roce_tos) alone.
		c.TOS = -1
	}
	if q.UserTimeout {
		c.AckTimeout = int(q.Timeout)
	}
	return c
}

// ParseFlowLabels parses --flow_label's "fl0,fl1,..." (decimal, or hex
// with 0x, as perftest's strtol base 0).
func ParseFlowLabels(s string) ([]uint32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list: want one flow label per QP, comma separated")
	}
	var out []uint32
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(f), 0, 32)
		if err != nil || v > maxFlowLabel {
			return nil, fmt.Errorf("bad flow label %q: want 0..%d (20 bits), decimal or 0x hex", f, maxFlowLabel)
		}
		out = append(out, uint32(v))
	}
	return out, nil
}

// QPReport is one QP's attributes as the kernel reports them back
// (QUERY_QP after RTS), for the JSON's "qos" block: proof that the QoS
// options reached the QP, not only our own record of them.
type QPReport struct {
	QPN          uint32 `json:"qpn"`
	State        string `json:"state"`
	TrafficClass uint8  `json:"traffic_class"`
	FlowLabel    uint32 `json:"flow_label"`
	SL           uint8  `json:"sl"`
	Timeout      uint8  `json:"timeout"`
	RetryCnt     uint8  `json:"retry_cnt"`
	RNRRetry     uint8  `json:"rnr_retry"`
	PKeyIndex    uint16 `json:"pkey_index"`
}

// QPQuerier is a Device that can report its QPs' attributes as the
// kernel holds them (device_verbs.go; fakes need not).
type QPQuerier interface {
	QueryQP(i int) (QPReport, error)
}

// QoSReport is the JSON's "qos": what the options asked for, and what
// the kernel reports each QP has (QUERY_QP; absent where the device
// cannot say). rxe keeps no SL (its address vector holds the GRH only),
// so its QPs report sl 0 whatever was asked.
type QoSReport struct {
	TrafficClass uint8      `json:"traffic_class"`
	FlowLabels   []uint32   `json:"flow_labels"`
	SL           uint8      `json:"sl"`
	Timeout      uint8      `json:"qp_timeout"`
	RetryCount   uint8      `json:"retry_count"`
	PKeyIndex    int        `json:"pkey_index"`
	QPs          []QPReport `json:"qp_attrs"`
}

// queryQoS fills the result's QoS report once the QPs are up.
func (s *Session) queryQoS() error {
	q := &s.P.QoS
	r := &QoSReport{TrafficClass: q.TrafficClass(), FlowLabels: q.FlowLabels, SL: q.SL, Timeout: q.QPTimeout(),
		RetryCount: q.RetryCount(), PKeyIndex: q.PKeyIndex, QPs: []QPReport{}}
	if r.FlowLabels == nil {
		r.FlowLabels = []uint32{}
	}
	if qq, ok := s.Dev.(QPQuerier); ok {
		for i := range s.my {
			a, err := qq.QueryQP(i)
			if err != nil {
				return err
			}
			r.QPs = append(r.QPs, a)
		}
	}
	s.result.QoS = r
	return nil
}

// checkPKeyIndex refuses a --pkey_index beyond the port's P_Key table
// (perftest's ctx_chk_pkey_index falls back to 0 with a warning; a run
// on another partition than asked measures the wrong thing).
func (s *Session) checkPKeyIndex() error {
	i := s.P.QoS.PKeyIndex
	if i == 0 || s.port.PKeys == 0 || i < s.port.PKeys {
		return nil
	}
	ent := "entries"
	if s.port.PKeys == 1 {
		ent = "entry"
	}
	return fmt.Errorf("--pkey_index %d: the P_Key table of %s port %d has %d %s (0..%d)", i, s.P.Device, s.P.IBPort, s.port.PKeys, ent, s.port.PKeys-1)
}
