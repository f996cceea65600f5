package kfeat

import "testing"

func TestProbedOnce(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	n := 0
	probe := func() (bool, string) { n++; return true, "ENOSPC" }
	for i := 0; i < 2; i++ {
		if !Has(UverbsIoctl, probe) {
			t.Fatalf("call %d: Has = false, want true", i+1)
		}
	}
	if n != 1 {
		t.Fatalf("probe ran %d times, want once", n)
	}
	if r, ok := Lookup(UverbsIoctl); !ok || !r.Present || r.Detail != "ENOSPC" || r.Forced {
		t.Fatalf("Lookup = %+v, %v", r, ok)
	}
}

func TestForcedAbsent(t *testing.T) {
	for _, env := range []string{"query_gid_table", " uverbs_ioctl , query_gid_table", "all"} {
		t.Setenv(EnvAbsent, env)
		Reset()
		ran := false
		if Has(QueryGIDTable, func() (bool, string) { ran = true; return true, "" }) || ran {
			t.Fatalf("%s=%q: query_gid_table present or probed", EnvAbsent, env)
		}
		if !Forced(QueryGIDTable) {
			t.Fatalf("%s=%q: Forced = false", EnvAbsent, env)
		}
		if r, _ := Lookup(QueryGIDTable); !r.Forced || r.Present {
			t.Fatalf("%s=%q: %+v", EnvAbsent, env, r)
		}
	}
	t.Setenv(EnvAbsent, "query_gid_table")
	Reset()
	if !Has(QueryPortIoctl, func() (bool, string) { return true, "" }) {
		t.Fatal("a feature not named was forced absent")
	}
	Reset()
}

func TestSetKeepsFirstAndOrder(t *testing.T) {
	Reset()
	t.Cleanup(Reset)
	Set("zzz_other", true, "")
	Set(QueryPortIoctl, false, "EPROTONOSUPPORT")
	Set(QueryPortIoctl, true, "later")
	Has(UverbsIoctl, func() (bool, string) { return true, "" })
	all := All()
	if len(all) != 3 || all[0].Name != UverbsIoctl || all[1].Name != QueryPortIoctl || all[2].Name != "zzz_other" {
		t.Fatalf("All = %+v", all)
	}
	if all[1].Present || all[1].Detail != "EPROTONOSUPPORT" {
		t.Fatalf("Set replaced the first answer: %+v", all[1])
	}
}

func TestState(t *testing.T) {
	t.Setenv(EnvAbsent, NLDEVSystem)
	Reset()
	t.Cleanup(Reset)
	Has(UverbsIoctl, func() (bool, string) { return false, "ENOTTY" })
	Set(QueryPortIoctl, true, "joined")
	for _, c := range []struct{ name, state, detail string }{
		{UverbsIoctl, "absent", "ENOTTY"},
		{QueryGIDTable, "absent", "needs uverbs_ioctl"},
		{NLDEVSystem, "forced_absent", "forced absent by " + EnvAbsent},
		{QueryPortIoctl, "present", "joined"},
	} {
		if st, d := State(c.name); st != c.state || d != c.detail {
			t.Errorf("State(%s) = %q, %q; want %q, %q", c.name, st, d, c.state, c.detail)
		}
	}
	Reset()
	if st, _ := State(QueryGIDTable); st != "unknown" {
		t.Errorf("State of an unprobed feature = %q, want unknown", st)
	}
}
