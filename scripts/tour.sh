#!/bin/bash
# tour.sh: show rdmactl at work (make tour, the README's first command).
#
# Asks rdmactl itself whether this host has RDMA devices (rdmactl -j link
# show: exit 5 means the kernel has no RDMA support, an empty list means no
# devices):
#   * devices here: the tour inspects them (link show, gids, dev query and
#     counters of the first port). It starts no traffic unless --perf is
#     given: then a short perf write runs in loopback on that first device.
#   * none: one line says so, and the tour runs in the project's VM (vm/run,
#     Debian's kernel in qemu with Soft-RoCE devices rxe0 and rxe1): link
#     show, gids, dev query rxe0, a short perf write from rxe1 to rxe0, and
#     the counters that traffic moved. vm/run installs what it needs through
#     apt and caches a kernel; its first run takes a minute or two and says
#     what it fetches.
#
# usage: scripts/tour.sh [--vm] [--perf] [RDMACTL]
#   --vm     run the VM tour even where the host has RDMA devices
#   --perf   on the host's devices, also run the short perf write (loopback)
#   RDMACTL  the binary (default bin/rdmactl; make tour builds it)
#
# Environment: RDMACTL_TOUR_ITERS (perf iterations, default 300);
# RDMACTL_TOUR_REF=FILE makes the VM tour write, after its steps and from
# the same boot, iproute2's view of the devices (rdma -j dev show) to FILE,
# for checking the tour's output against it (scripts/tour_test.go).
set -euo pipefail
SELF=$(readlink -f "${BASH_SOURCE[0]}")
ROOT=$(dirname "$(dirname "$SELF")")

FORCE_VM=0 PERF=0 IN_VM=0
while [ $# -gt 0 ]; do
	case $1 in
	--vm) FORCE_VM=1 ;;
	--perf) PERF=1 ;;
	--in-vm) IN_VM=1 ;; # the VM half; vm/run runs it
	-h | --help) sed -n '2,25p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "tour: unknown option $1 (see scripts/tour.sh --help)" >&2; exit 2 ;;
	*) break ;;
	esac
	shift
done
BIN=$(readlink -f "${1:-$ROOT/bin/rdmactl}") && [ -x "$BIN" ] ||
	{ echo "tour: no ${1:-bin/rdmactl} (make tour builds it)" >&2; exit 2; }
if [ -n "${RDMACTL_TOUR_REF:-}" ]; then
	RDMACTL_TOUR_REF=$(readlink -f "$RDMACTL_TOUR_REF")
	export RDMACTL_TOUR_REF
fi
cd "$ROOT"
ITERS=${RDMACTL_TOUR_ITERS:-300}
[[ $ITERS =~ ^[1-9][0-9]*$ ]] || { echo "tour: RDMACTL_TOUR_ITERS must be a positive number" >&2; exit 2; }

# The headings show the commands as a user would type them.
rdmactl() { "$BIN" "$@"; }
step() { # step CMD...: a one-line heading, then CMD's output
	printf '\n$ %s\n' "$*"
	"$@"
}
# dev query prints all of ibv_devinfo -v (over a hundred lines): the
# device's identity, then where the rest went.
devquery() {
	local out n
	printf '\n$ rdmactl dev query %s\n' "$1"
	out=$(rdmactl dev query "$1")
	n=$(wc -l <<<"$out")
	head -n 9 <<<"$out"
	if [ "$n" -gt 9 ]; then
		echo "  ... $((n - 9)) more lines: limits, capability flags, each port and its GIDs"
	fi
}
# perfpair SERVER_DEV CLIENT_DEV ADDR [ARGS]: a perf write server in the
# background and its client; the client's report is shown, the server's
# only if the pair failed.
perfpair() {
	local sdev=$1 cdev=$2 addr=$3 log rc=0 src=0
	shift 3
	log=$(mktemp)
	printf '\n$ rdmactl perf write -d %s -n %s%s & rdmactl perf write -d %s -n %s%s %s\n' \
		"$sdev" "$ITERS" "${*:+ $*}" "$cdev" "$ITERS" "${*:+ $*}" "$addr"
	rdmactl perf write -d "$sdev" -n "$ITERS" "$@" >"$log" 2>&1 &
	local spid=$!
	rdmactl perf write -d "$cdev" -n "$ITERS" "$@" "$addr" || rc=$?
	wait "$spid" || src=$?
	if [ "$rc" != 0 ] || [ "$src" != 0 ]; then
		echo "tour: perf write failed (client exit $rc, server exit $src); the server said:"
		sed 's/^/  server: /' "$log"
		rm -f "$log"
		return 1
	fi
	rm -f "$log"
}

if [ "$IN_VM" = 1 ]; then
	[ "${RDMACTL_VM:-}" = 1 ] || { echo "tour: --in-vm is for vm/run" >&2; exit 2; }
	exec 2>&1 # one stream, so that errors stay in place
	step rdmactl link show
	step rdmactl gids
	devquery rxe0
	perfpair rxe0 rxe1 10.77.0.1
	step rdmactl counters rxe0/1 --nonzero
	echo
	echo "(The VM stops here. vm/run -- bin/rdmactl COMMAND boots another; bin/rdmactl --help lists the commands.)"
	if [ -n "${RDMACTL_TOUR_REF:-}" ]; then
		rdma -j dev show >"$RDMACTL_TOUR_REF"
	fi
	exit 0
fi

# ---- on the host: ask rdmactl whether there is anything to show -------------
rc=0
links=$(rdmactl -j link show 2>/dev/null) || rc=$?
why=
case $rc in
0) grep -q '"ifname"' <<<"$links" || why="this kernel has RDMA but no devices (rdmactl link show lists none)" ;;
5) why="this kernel has no RDMA support (rdmactl link show: exit 5)" ;;
*) rdmactl link show; exit $? ;; # rdmactl's own one-line reason, and its exit code
esac
if [ "$FORCE_VM" = 1 ] && [ -z "$why" ]; then why="the VM tour was asked for (--vm)"; fi

if [ -z "$why" ]; then
	# The first port: "ifname" and "port" of the first object.
	first=$(sed 's/}.*//' <<<"$links")
	dev=$(sed -n 's/.*"ifname":"\([^"]*\)".*/\1/p' <<<"$first")
	port=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' <<<"$first")
	echo "rdmactl on this host's RDMA devices (inspection only; --perf adds a loopback perf write on $dev)"
	step rdmactl link show
	step rdmactl gids
	devquery "$dev"
	step rdmactl counters "$dev/$port" --nonzero
	if [ "$PERF" = 1 ]; then
		perfpair "$dev" "$dev" 127.0.0.1 -i "$port"
	fi
	exit 0
fi

echo "tour: $why; running the tour in a qemu VM with Soft-RoCE devices rxe0 and rxe1 instead (vm/run: the first run installs packages and fetches a kernel, a minute or two)"
share=()
if [ -n "${RDMACTL_TOUR_REF:-}" ]; then share=(--share "$(dirname "$RDMACTL_TOUR_REF")"); fi
exec vm/run --rxe 2 --timeout 600 "${share[@]}" -- "$SELF" --in-vm "$BIN"
