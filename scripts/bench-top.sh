#!/bin/bash
# scripts/bench-top.sh: the CPU cost of rdmactl top against rdmactl counters
# --watch at the same interval (1 s), in one VM with N rxe devices (default
# 128). Each runs alone for SECS seconds (default 10) after a warm-up of
# WARM seconds (default 3, start-up excluded), in ROUNDS rounds (default 3)
# of the three in turn; its CPU time (user+system, /proc/PID/stat) is
# printed per round in ms per second of wall time, with the total and the
# ratio of totals to counters --watch. top is measured twice: -b (plain text
# frames to /dev/null) and the terminal UI in tmux (80x24), if the host has
# tmux (vm/run installs it). Figures only; nothing is asserted. Under TCG
# the guest CPU is emulated: compare the ratios.
#
# Environment: RDMACTL (binary; default bin/rdmactl), VMRUN (default
# vm/run), N, SECS, WARM, ROUNDS, VMFLAGS (more vm/run options).
#
# Inside the VM it is run as: bench-top.sh --guest BIN
set -euo pipefail

guest() {
	local bin=$1 secs=${SECS:-20} warm=${WARM:-3} hz
	hz=$(getconf CLK_TCK)
	# As bench-scale.sh: the binary from the guest's tmpfs, not over 9p.
	install -m 0755 "$bin" /usr/local/bin/rdmactl-bench
	ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
	# measure NAME PID: CPU ms per wall second of PID over secs.
	measure() {
		local name=$1 pid=$2 a b
		sleep "$warm"
		a=$(ticks "$pid")
		sleep "$secs"
		b=$(ticks "$pid")
		echo "ROW|$name|$(((b - a) * 1000 / hz / secs))|$(((b - a) * 1000 / hz))"
	}
	local pid r
	# ROUNDS rounds of the three in turn, so that a change in the load of
	# the machine (other VMs) falls on all three alike.
	for r in $(seq "${ROUNDS:-3}"); do
		rdmactl-bench counters --watch=1s >/dev/null 2>&1 &
		pid=$!
		measure "counters --watch=1s" "$pid"
		kill "$pid"
		wait "$pid" 2>/dev/null || true

		rdmactl-bench top -b -i 1s >/dev/null 2>&1 &
		pid=$!
		measure "top -b -i 1s" "$pid"
		kill "$pid"
		wait "$pid" 2>/dev/null || true

		if command -v tmux >/dev/null; then
			local sock=/tmp/bench-top.sock
			tmux -S "$sock" new-session -d -x 80 -y 24 "exec rdmactl-bench top -i 1s"
			pid=$(tmux -S "$sock" list-panes -F '#{pane_pid}')
			measure "top -i 1s (tmux 80x24)" "$pid"
			tmux -S "$sock" kill-server
		fi
	done
}

if [ "${1:-}" = --guest ]; then
	guest "$2"
	exit 0
fi

RDMACTL=${RDMACTL:-bin/rdmactl}
VMRUN=${VMRUN:-vm/run}
N=${N:-128}
echo "bench-top: $N devices, ${ROUNDS:-3} rounds of ${SECS:-10} s each..." >&2
# shellcheck disable=SC2086
$VMRUN ${VMFLAGS:-} --rxe "$N" -- env SECS="${SECS:-10}" WARM="${WARM:-3}" ROUNDS="${ROUNDS:-3}" "$0" --guest "$RDMACTL" |
	grep '^ROW|' | awk -F'|' -v n="$N" '
	!($2 in ms) { order[++k] = $2 }
	{ ms[$2] += $4; secs[$2] += $4 / ($3 > 0 ? $3 : 1); runs[$2] = runs[$2] " " $3 }
	END {
		base = ms[order[1]]
		for (i = 1; i <= k; i++) {
			c = order[i]
			printf "%-26s %4s devices  rounds (ms CPU/s):%-16s  total %6d ms  %5.2fx counters --watch\n", c, n, runs[c], ms[c], (base > 0 ? ms[c] / base : 0)
		}
	}'
