#!/bin/bash
# scripts/trace-lat.sh [ROUNDS]: where a 2-byte write_lat message spends
# its time, rdmactl against perftest, measured so that the emulator's
# speed swings cancel out.
#
# bench-perftest.sh compares whole runs, and under TCG a run's latency
# mostly follows how fast the emulated kernel happens to be running (its
# "kernel path" row; see there). This script compares the two tools
# within each run instead: every run pairs one rdmactl with one
# ib_write_lat (ROUNDS times rdmactl server + perftest client, and as
# many the other way round), and kprobes time each message through the
# kernel. Both tools' messages in a run see the same emulator state, so
# the ratio of their medians shows what the tools do differently.
#
# Per message (the sender's vCPU runs all of it, up to the data landing
# in the peer's memory):
#   user   the peer's previous message landed (rxe_mr_copy into our
#          buffer) -> our doorbell write(2) enters the kernel: our spin
#          noticing it, and our post
#   then   write(2) entry -> rxe_post_send -> rxe_requester -> the
#          payload copied from our MR (rxe_mr_copy) -> rxe_xmit_packet ->
#          (veth, bridge) rxe_udp_encap_recv -> rxe_rcv -> rxe_responder
#          -> the payload copied into the peer's MR (rxe_mr_copy)
#   kern   rxe_post_send -> the payload in the peer's MR
# The table gives, per interval, each tool's median (ns, over the runs'
# medians) and the ratio rdmactl/perftest: for each pairing, the geometric
# mean over its runs with a 95% CI, and "both", which multiplies out
# which vCPU and which role each tool had (the square root of the two
# pairings' product, run by run). Tracing adds to every interval, the same
# for both tools. The emulator's slow spells hit one vCPU at a time (one
# tool's messages at twice the other's within a run), so the table is
# printed twice: over all runs, and over the runs in which both tools'
# kern was at most 1.25 times the fastest run's (both vCPUs at full
# speed): read that one.
#
# Environment: RDMACTL (binary; default: bin/rdmactl built from this
# tree), VMRUN (default vm/run), ITERS (default 1000), KEEP (a directory
# for the raw traces; default: a temporary one, removed).
set -euo pipefail

if [ "${1:-}" = "--guest" ]; then
	R=$2 ROUNDS=$3 ITERS=$4 OUT=$5
	T=/sys/kernel/tracing
	[ -e $T/trace ] || mount -t tracefs none $T
	echo 0 >$T/tracing_on
	echo x86-tsc >$T/trace_clock
	echo 32768 >$T/buffer_size_kb
	echo 'p:rt/post rxe_post_send' >>$T/kprobe_events
	# rxe_mr_copy(mr, iova, addr, length, dir): dir 0 into the MR (the
	# responder), 1 out of it (the requester).
	echo 'p:rt/mrcopy rxe_mr_copy dir=%r8:u32' >>$T/kprobe_events
	for f in rxe_requester rxe_xmit_packet rxe_udp_encap_recv rxe_rcv rxe_responder; do
		echo "p:rt/$f $f" >>$T/kprobe_events
	done
	echo 1 >$T/events/rt/enable
	echo 'id == 1' >$T/events/raw_syscalls/sys_enter/filter # write(2)
	echo 1 >$T/events/raw_syscalls/sys_enter/enable
	dmesg | grep -o 'Refined TSC clocksource calibration: [0-9.]* MHz' | grep -o '[0-9.]* MHz' | head -1 >"$OUT/tsc"
	[ -s "$OUT/tsc" ] || dmesg | grep -o 'tsc: Detected [0-9.]* MHz' | grep -o '[0-9.]* MHz' | head -1 >"$OUT/tsc"
	port=19300
	# one NAME SERVER... -- CLIENT...: one pair, traced.
	one() {
		local name=$1 srv=() cli=()
		shift
		while [ "$1" != -- ]; do srv+=("$1"); shift; done
		shift
		cli=("$@")
		timeout 60 "${srv[@]}" >"$OUT/srv.txt" 2>&1 &
		local spid=$! hex i
		hex=$(printf ':%04X' "$port")
		for ((i = 0; i < 100; i++)); do
			grep -qE "$hex 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 && break
			sleep 0.1
		done
		echo >$T/trace
		echo 1 >$T/tracing_on
		if ! timeout 45 "${cli[@]}" >"$OUT/cli.txt" 2>&1; then
			echo 0 >$T/tracing_on
			echo "trace-lat: $name failed:" >&2
			cat "$OUT/cli.txt" "$OUT/srv.txt" >&2
			kill "$spid" 2>/dev/null || true
		else
			echo 0 >$T/tracing_on
			cp $T/trace "$OUT/$name.trace"
		fi
		wait "$spid" || true
		sleep 1
	}
	for ((r = 1; r <= ROUNDS; r++)); do
		for pairing in rs pc; do
			port=$((port + 1))
			a=(-s 2 -n "$ITERS" -p "$port")
			echo "trace-lat: round $r $pairing" >&2
			if [ $pairing = rs ]; then # rdmactl server, perftest client
				one "rs-$r" "$R" perf write --lat -d rxe0 "${a[@]}" -- ib_write_lat -d rxe1 "${a[@]}" 10.77.0.1
			else
				one "pc-$r" ib_write_lat -d rxe0 "${a[@]}" -- "$R" perf write --lat -d rxe1 "${a[@]}" 10.77.0.1
			fi
		done
	done
	rm -f "$OUT/srv.txt" "$OUT/cli.txt"
	exit 0
fi

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
ROUNDS=${1:-12}
if [ -z "${RDMACTL:-}" ]; then
	RDMACTL=bin/rdmactl
	# make build: the shipped binary's flags (version stamps, the heap's
	# THP setting), not a plain go build's.
	${MAKE:-make} --no-print-directory build GO="${GO:-go}" >&2
fi
RDMACTL=$(readlink -f "$RDMACTL")
if [ -n "${KEEP:-}" ]; then
	KEEP=$(mkdir -p "$KEEP" && readlink -f "$KEEP")
else
	KEEP=$(mktemp -d)
	trap 'rm -rf "$KEEP"' EXIT
fi
"${VMRUN:-vm/run}" --cpus 2 --timeout $((600 + ROUNDS * 60)) --share "$KEEP" -- \
	"$PWD/scripts/trace-lat.sh" --guest "$RDMACTL" "$ROUNDS" "${ITERS:-1000}" "$KEEP"
${GO:-go} run ./scripts/tracelat "$KEEP"
