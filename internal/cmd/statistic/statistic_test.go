package statistic

import (
	"testing"
)

// statistic qp bind needs lqpn, unbind cntn; each takes the other too.
func TestParseQPArgs(t *testing.T) {
	q, err := parseQPArgs("statistic qp bind", []string{"link", "rxe0/1", "cntn", "4", "lqpn", "17"}, "lqpn", "cntn")
	if err != nil || q.dev != "rxe0" || q.port != 1 || q.lqpn == nil || *q.lqpn != 17 || q.cntn == nil || *q.cntn != 4 {
		t.Fatalf("bind: %+v, %v", q, err)
	}
	q, err = parseQPArgs("statistic qp unbind", []string{"link", "rxe0/2", "cntn", "4"}, "cntn", "lqpn")
	if err != nil || q.port != 2 || q.lqpn != nil || q.cntn == nil || *q.cntn != 4 {
		t.Fatalf("unbind: %+v, %v", q, err)
	}
	for _, c := range []struct {
		need, other string
		args        []string
		want        string
	}{
		{"lqpn", "cntn", []string{"link", "rxe0/1", "cntn", "4"}, "statistic qp bind: needs lqpn N"},
		{"cntn", "lqpn", []string{"link", "rxe0/1", "lqpn", "4"}, "statistic qp bind: needs cntn N"},
		{"lqpn", "cntn", []string{"link", "rxe0/1", "lqpn", "x", "cntn", "y"}, `statistic qp bind: lqpn "x": want a number`},
		{"cntn", "lqpn", []string{"link", "rxe0/1", "lqpn", "x", "cntn", "y"}, `statistic qp bind: cntn "y": want a number`},
		{"lqpn", "cntn", []string{"link", "rxe0", "lqpn", "1"}, "statistic qp bind: link rxe0: needs a port, as in rxe0/1"},
		{"lqpn", "cntn", []string{"lqpn", "1"}, "statistic qp bind: needs link DEV/PORT"},
		{"lqpn", "cntn", []string{"link", "rxe0/1", "qpn", "1"}, `statistic qp bind: unexpected "qpn" (expected: link, lqpn, cntn)`},
	} {
		_, err := parseQPArgs("statistic qp bind", c.args, c.need, c.other)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v (need %s): %v, want %q", c.args, c.need, err, c.want)
		}
	}
}
