#!/bin/bash
# bench-link.sh: 'rdmactl link show' against 'rdma link show' in the VM,
# alternating the two N times (default 25) and printing each one's median
# wall time in ms. Run it inside the VM (make bench-link does).
#
# rdmactl is first copied to the guest's own file system, as a user's
# installed binary would be: the project directory reaches the guest over 9p,
# and paging a 4 MB binary in over 9p on every run costs far more than
# either tool's work (seen: ~450 ms from 9p against ~140 ms from tmpfs for
# the same binary), while rdma and its libraries come from the guest's page
# cache after the first run.
set -euo pipefail
BIN=${1:-bin/rdmactl}
N=${N:-25}
install -m 0755 "$BIN" /usr/local/bin/rdmactl-bench
a=() b=()
for c in 'rdma link show' 'rdmactl-bench link show'; do $c > /dev/null; done # warm up
# ms CMD...: CMD's wall time in ms from bash's own clock ($EPOCHREALTIME,
# bash 5): date(1) around each run would time two more processes too.
ms() {
	local s=${EPOCHREALTIME//[!0-9]/} e
	"$@" > /dev/null
	e=${EPOCHREALTIME//[!0-9]/}
	printf '%d.%d\n' $(((e - s) / 1000)) $(((e - s) % 1000 / 100))
}
[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-link.sh: needs bash 5 (\$EPOCHREALTIME)" >&2; exit 1; }
for _ in $(seq "$N"); do
	a+=("$(ms rdma link show)")
	b+=("$(ms rdmactl-bench link show)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf '%-22s %8s %6s\n' command median_ms runs
printf '%-22s %8s %6s\n' 'rdma link show' "$(median "${a[@]}")" "$N"
printf '%-22s %8s %6s\n' 'rdmactl link show' "$(median "${b[@]}")" "$N"
