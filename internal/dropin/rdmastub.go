package dropin

// notYet refuses an rdma object rdmactl's rdma does not print yet.
func notYet(what, instead string) func(*rd) int {
	return func(r *rd) int {
		r.errf("%s: rdmactl's %s does not print '%s' yet (use '%s')\n", r.filename, r.filename, what, instead)
		return exitReadOnly
	}
}

var (
	cmdRes  = notYet("resource", "rdmactl res")
	cmdStat = notYet("statistic", "rdmactl statistic")
)
