package perf

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// recDevice records what the session asks of a fake device: the QoS
// options must reach Setup (P_Key index), Connect (RTR/RTS) and CreateAH.
type recDevice struct {
	*fakeDevice
	mu    sync.Mutex
	setup SetupConfig
	conns []ConnectConfig
	ahs   []ConnectConfig
}

func (d *recDevice) Setup(cfg SetupConfig) (*Resources, error) {
	d.setup = cfg
	return d.fakeDevice.Setup(cfg)
}

func (d *recDevice) Connect(i int, cfg ConnectConfig) error {
	d.mu.Lock()
	d.conns = append(d.conns, cfg)
	d.mu.Unlock()
	return d.fakeDevice.Connect(i, cfg)
}

func (d *recDevice) CreateAH(remote *Dest, cfg ConnectConfig) (*verbs.AH, error) {
	d.ahs = append(d.ahs, cfg)
	return d.fakeDevice.CreateAH(remote, cfg)
}

// QueryQP answers as a kernel that keeps what Connect set.
func (d *recDevice) QueryQP(i int) (QPReport, error) {
	c := d.conns[i]
	return QPReport{QPN: c.Local.QPN, State: "RTS", TrafficClass: c.TrafficClass, FlowLabel: c.FlowLabel, SL: c.SL,
		Timeout: c.Timeout, RetryCnt: c.RetryCnt, RNRRetry: 7, PKeyIndex: d.setup.PKeyIndex}, nil
}

func runRecPair(t *testing.T, srv, cli Params) (s, c *sideOut, ds, dc *recDevice) {
	t.Helper()
	f := newFakeFabric()
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
	ds, dc = &recDevice{fakeDevice: newFakeDevice(f, 1)}, &recDevice{fakeDevice: newFakeDevice(f, 2)}
	ds.port.PKeys, dc.port.PKeys = 1, 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ss := &Session{P: &srv, Dev: ds, Out: &s.out, Listener: l, StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
		s.res, s.err = ss.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		cs := &Session{P: &cli, Dev: dc, Out: &c.out, StepTimeout: 5 * time.Second, Stall: 3 * time.Second}
		c.res, c.err = cs.Run(ctx)
	}()
	wg.Wait()
	return s, c, ds, dc
}

// The client's QoS options reach its QPs (per-QP flow labels in turn),
// its UD AHs and its report; the server, without options, gets
// perftest's defaults: nothing of it crosses the exchange.
func TestSessionQoSReachesQPs(t *testing.T) {
	for _, conn := range []Transport{RC, UD} {
		q := QoS{SL: 3, TClass: 104, TOS: -1, FlowLabels: []uint32{0x11, 0x22}, Timeout: 20, UserTimeout: true, RetryCnt: 4, UserRetry: true, PKeyIndex: 3}
		cli := Params{Verb: VerbSend, Test: TestBW, Conn: conn, Size: 256, Iters: 100, QPs: 3, QoS: q}
		srv := Params{Verb: VerbSend, Test: TestBW, Conn: conn, Size: 256, Iters: 100, QPs: 3}
		s, c, ds, dc := runRecPair(t, srv, cli)
		if s.err != nil || c.err != nil {
			t.Fatalf("%v: server %v, client %v", conn, s.err, c.err)
		}
		if dc.setup.PKeyIndex != 3 || ds.setup.PKeyIndex != 0 {
			t.Errorf("%v: P_Key index client %d server %d", conn, dc.setup.PKeyIndex, ds.setup.PKeyIndex)
		}
		for i, cfg := range dc.conns {
			if cfg.TrafficClass != 104 || cfg.SL != 3 || cfg.Timeout != 20 || cfg.RetryCnt != 4 || cfg.FlowLabel != []uint32{0x11, 0x22, 0x11}[i] {
				t.Errorf("%v: client QP %d connect %+v", conn, i, cfg)
			}
		}
		for i, cfg := range ds.conns {
			if cfg.TrafficClass != 0 || cfg.SL != 0 || cfg.Timeout != 14 || cfg.RetryCnt != 7 || cfg.FlowLabel != 0 {
				t.Errorf("%v: server QP %d connect %+v", conn, i, cfg)
			}
		}
		if conn == UD && (len(dc.ahs) != 3 || dc.ahs[1].TrafficClass != 104 || dc.ahs[1].FlowLabel != 0x22 || dc.ahs[2].SL != 3) {
			t.Errorf("UD AHs %+v", dc.ahs)
		}
		r := c.res.QoS
		if r == nil || r.TrafficClass != 104 || r.SL != 3 || r.Timeout != 20 || r.RetryCount != 4 || r.PKeyIndex != 3 || len(r.QPs) != 3 ||
			r.QPs[2].FlowLabel != 0x11 || r.QPs[0].PKeyIndex != 3 {
			t.Errorf("%v: client QoS report %+v", conn, r)
		}
		if r := s.res.QoS; r == nil || r.Timeout != 14 || r.RetryCount != 7 || len(r.QPs) != 3 || r.QPs[0].TrafficClass != 0 {
			t.Errorf("%v: server QoS report %+v", conn, r)
		}
	}
}

func TestSessionPKeyIndexBeyondTable(t *testing.T) {
	// Refused before any connection: no peer needed.
	cli := Params{Verb: VerbWrite, Test: TestBW, Iters: 100, Host: "127.0.0.1", Port: 1, Device: "rxe1", QoS: QoS{TClass: -1, TOS: -1, PKeyIndex: 4}}
	cli.Defaults()
	d := &recDevice{fakeDevice: newFakeDevice(newFakeFabric(), 2)}
	d.port.PKeys = 4
	_, err := (&Session{P: &cli, Dev: d}).Run(context.Background())
	if err == nil || err.Error() != "--pkey_index 4: the P_Key table of rxe1 port 1 has 4 entries (0..3)" {
		t.Fatalf("client: %v", err)
	}
}

// The same run passes a limit below its figure and misses one above it,
// with a LimitError that says by how much; both print their report.
func TestSessionLimits(t *testing.T) {
	run := func(l Limits, test Test) (*sideOut, *sideOut) {
		cli := Params{Verb: VerbWrite, Test: test, Iters: 200, Limits: l}
		srv := Params{Verb: VerbWrite, Test: test, Iters: 200, Limits: l}
		s, c, _, _ := runRecPair(t, srv, cli)
		return s, c
	}
	s, c := run(Limits{BW: 0.001, MsgRate: 1e-9}, TestBW)
	if s.err != nil || c.err != nil || len(c.res.Limits) != 2 || !c.res.Limits[0].Passed || len(s.res.Limits) != 2 {
		t.Fatalf("low limits: %v %v %+v", s.err, c.err, c.res)
	}
	s, c = run(Limits{BW: 1e12}, TestBW)
	var le *LimitError
	if !errors.As(c.err, &le) || !errors.As(s.err, &le) || c.res == nil || len(c.res.BW) != 1 || c.res.Limits[0].Passed {
		t.Fatalf("high limit: server %v, client %v", s.err, c.err)
	}
	if m := c.err.Error(); !strings.HasPrefix(m, "bw_avg ") || !strings.Contains(m, "is below -w/--limit_bw 1000000000000 by") || !strings.Contains(c.out.String(), "BW average") {
		t.Fatalf("message %q", m)
	}
	_, c = run(Limits{Lat: 1e9, LatPct: 99}, TestLat)
	if c.err != nil || len(c.res.Limits) != 1 || c.res.Limits[0].Name != "lat_p99" || !c.res.Limits[0].Passed {
		t.Fatalf("high lat limit: %v %+v", c.err, c.res.Limits)
	}
	_, c = run(Limits{Lat: 1e-6}, TestLat)
	if !errors.As(c.err, &le) || le.Check.Name != "lat_p50" || !strings.Contains(c.err.Error(), "is above --limit_lat 0.000001 by") {
		t.Fatalf("low lat limit: %v", c.err)
	}
}

func TestCheckLimitsAllSizes(t *testing.T) {
	// perftest's rule for -a: the best row decides.
	r := &Result{Unit: "MiB/s", BW: []BWResult{{Size: 2, BWAvg: 1}, {Size: 65536, BWAvg: 900}, {Size: 1 << 20, BWAvg: 850}}}
	if c, err := checkLimits(&Limits{BW: 899}, r); err != nil || c[0].Value != 900 {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := checkLimits(&Limits{BW: 901}, r); err == nil || err.Error() != "bw_avg 900.00 MiB/s is below -w/--limit_bw 901 by 1.00 MiB/s (0.1%)" {
		t.Fatalf("%v", err)
	}
	if c, err := checkLimits(&Limits{}, r); c != nil || err != nil {
		t.Fatalf("no limits: %+v %v", c, err)
	}
}

// FuzzParseFlowLabels: --flow_label's parser never panics, and what it
// accepts is 20-bit labels, one per comma-separated field.
func FuzzParseFlowLabels(f *testing.F) {
	for _, s := range []string{"0", "0x12345,77", "1048575", "1048576", "1,,2", "", " 5 , 0x6", "-1", "0xfffff,0x100000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseFlowLabels(s)
		if err != nil {
			return
		}
		if len(v) != strings.Count(s, ",")+1 {
			t.Fatalf("%q -> %v", s, v)
		}
		for _, l := range v {
			if l > maxFlowLabel {
				t.Fatalf("%q -> %v", s, v)
			}
		}
	})
}

// TestQoSWithCM: with -R, what the CM carries is accepted and mapped
// (-T or an agreeing --tclass to the TOS, -u to the ACK timeout,
// --retry_count to both retry counts), the rest refused in one line.
func TestQoSWithCM(t *testing.T) {
	ok := []struct {
		q    QoS
		want cmQoS
	}{
		{NoQoS(), cmQoS{TOS: -1, AckTimeout: -1, Retry: 7}},
		{QoS{}, cmQoS{TOS: -1, AckTimeout: -1, Retry: 7}},
		{QoS{TClass: -1, TOS: 0}, cmQoS{TOS: 0, AckTimeout: -1, Retry: 7}},
		{QoS{TClass: -1, TOS: 106}, cmQoS{TOS: 106, AckTimeout: -1, Retry: 7}},
		{QoS{TClass: 106, TOS: 106}, cmQoS{TOS: 106, AckTimeout: -1, Retry: 7}},
		{QoS{TClass: -1, TOS: -1, Timeout: 0, UserTimeout: true, RetryCnt: 3, UserRetry: true}, cmQoS{TOS: -1, AckTimeout: 0, Retry: 3}},
	}
	for _, c := range ok {
		if err := c.q.validateCM(); err != nil {
			t.Errorf("%+v: %v", c.q, err)
		}
		if got := c.q.cm(); got != c.want {
			t.Errorf("%+v: cm() %+v, want %+v", c.q, got, c.want)
		}
	}
	for _, c := range []struct {
		q    QoS
		want string
	}{
		{QoS{TClass: 104, TOS: -1}, "--tclass (use -T) not supported"},
		{QoS{TClass: -1, TOS: -1, FlowLabels: []uint32{1}, PKeyIndex: 1}, "--flow_label, --pkey_index not supported"},
	} {
		err := c.q.validateCM()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line with %q", c.q, err, c.want)
		}
	}
}
