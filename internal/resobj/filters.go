package resobj

// The filters rdmactl has, by the kind of value they take: a list of
// numbers and ranges ("1-3,7") or of names ("rts,init", any case). Each
// is res's --KEY flag and, after "res show OBJECT", rdma's "KEY VALUE"
// (internal/rdmagrammar); it applies to the objects whose Filters name it
// (inventory.ResMatch compares the field).
var (
	NumFilters = []string{"pid", "lqpn", "rqpn", "pdn", "cqn", "mrn", "ctxn", "srqn", "cm-idn", "sq-psn", "rq-psn", "rkey", "lkey",
		"users", "mrlen", "src-port", "dst-port"}
	NameFilters = []string{"state", "type", "qp-type", "path-mig-state", "poll-ctx", "ps", "src-addr", "dst-addr"}
)

// IgnoredFilters are in rdma's cm_id filter table, but rdma never applies
// them (rdma/res-cmid.c has no check for them: every CM ID passes) and the
// kernel reports neither per CM ID. rdmactl refuses them rather than print
// everything as if it had filtered; the value is why.
var IgnoredFilters = map[string]string{
	"dev-type":       "the kernel reports no device type per CM ID (rdma accepts dev-type and filters nothing)",
	"transport-type": "the kernel reports no transport type per CM ID (rdma accepts transport-type and filters nothing)",
}
