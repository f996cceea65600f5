#!/bin/bash
# scripts/bench-perftest.sh [ROUNDS]: rdmactl perf against perftest on the
# same rxe pair (rxe0 server, rxe1 client) in one VM boot, and prints
# side-by-side tables of medians over ROUNDS (default 3) runs each. A
# round runs perftest, rdmactl with its detached loop ("rdmactl", the
# default on rxe) and rdmactl --loop plain ("plain", the fallback loop of
# internal/perf/rtloop), in reverse order every other round; the tables
# compare rdmactl and plain with perftest, and plain with rdmactl:
#   write bandwidth and message rate at 64 B, 4 KiB and 64 KiB (ib_write_bw),
#   write latency median (t_typical) and p99 at 2 B and 4 KiB (ib_write_lat).
# Both tools' output is parsed with the same code (rdmactl prints perftest's
# layout). The latency rows come twice: as each tool printed them, and
# "from samples": both clients run with -U (every sample; perftest's and
# rdmactl's), and the script takes the median and the nearest-rank p99 of
# each run's samples itself. The printed p99s are different estimators:
# perftest drops its two largest samples and indexes ceil(0.99*(n-2)),
# one rank below the nearest rank on all n (ranks that far out are a few
# percent apart). Figures only; nothing is asserted. Under TCG the guest CPU is
# emulated, so compare the ratio, not the absolute numbers. "ratio" is
# the second tool's median over the first's (rdmactl's over perftest's); "paired" is the median of each round's
# ratio, which a slow spell of the host (it hits both runs of a round)
# moves less; "wins" counts the rounds in which rdmactl did at least as
# well; "gmean" and "95% CI" are the geometric mean of the per-round ratios
# and its confidence interval, and "verdict" says what the interval
# supports: ahead, behind, or level (it contains 1: no difference this
# run can show).
#
# scripts/bench-perftest.sh --table DIR...: the table again from the rows
# that KEEP=DIR runs kept, pooled over the DIRs.
#
# Environment: RDMACTL (binary; default: bin/rdmactl, built from this tree),
# VMRUN (default vm/run),
# BW_ITERS (default 2000), LAT_ITERS (default 1000, as perftest; runs 4-10x
# longer spread about as widely over 15 rounds: each run mixes the host's
# fast and slow spells in its own proportion),
# CONFIGS (a subset, e.g. "lat 2,lat 4096"), BASE (another rdmactl
# binary, say main's before a change: it runs as a fourth tool, "base",
# with rdmactl's arguments, and a table compares rdmactl with it), KEEP (a directory, shared
# with the guest, for the raw result rows of every run), CPUS (guest vCPUs,
# default 2: one per side; a third costs the host a core whenever any
# thread wakes on it, which under TCG slows the other two), KPATH=1 (see
# below).
#
# KPATH=1 also times the kernel's share of each latency run: the guest
# traces its NET_RX softirqs (tracefs, vec 3) while the client runs, and
# the table gets a "kernel path" row per latency size: per run, each
# vCPU's median time for one softirq, averaged over the vCPUs. In that
# softirq rxe on the sending vCPU carries a message through veth and the
# bridge to the peer's responder (which writes it into the peer's memory)
# and carries the ACK back to the completer. Both tools make the same
# POST_SEND doorbell, so this is the same kernel code for both, and it
# takes nearly all of a 2-byte half round trip. Under TCG it does not run
# at one speed: on a given vCPU it takes about 27 us a message, or 40-90
# us for stretches of 0.1 s to seconds, with either tool (traced: both
# tools, and either side of mixed pairs). Two causes are known. (1) QEMU
# sizes each vCPU's software TLB at its flushes (a CR3 write, a large
# munmap), from how many entries the last 100 ms used: a small one makes
# the kernel path slow, and it stays so until the next flush, which a
# spinning loop never makes. Shown by a diagnostic build that touched 6x32
# MiB of fresh memory and unmapped it just before the loop: its kernel
# path took 5-14% less time (three boots), perftest's 4-18% less with the
# same step injected by LD_PRELOAD. Neither tool does that; which size a
# run gets is luck. (2) The other vCPU's spin: rdmactl's waits called a
# function every round until 6f88e16 and 78fa78f, and its kernel path
# took 19% longer for it (20 rounds, one boot; see spinDetached). A
# latency row whose kernel path row differs as much measured the
# emulator's speed, not what the tools do. So the "fast kernel" rows
# repeat the latency rows over only the rounds in which both tools'
# kernel path ran at full speed (at most 1.25 times the fastest run's).
# Tracing costs each message a little, the same for both.
set -euo pipefail

# table DIR TITLE [NOTE]: the side-by-side table from the raw result rows in
# DIR (files TOOL-KIND-SIZE, one client row a run, round by round).
table() {
	local dir=$1
	# middle: the median of the numbers on stdin, one a line.
	middle() {
		sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.6g\n", (v[NR/2]+v[NR/2+1])/2}'
	}
	# median FILE COLUMN
	median() {
		awk -v c="$2" '{print $c}' "$1" | middle
	}
	# spread FILE COLUMN: "min-max" over the rounds.
	spread() {
		awk -v c="$2" '{print $c}' "$1" | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s-%s\n", lo, hi}'
	}
	# rounds PERFTEST_FILE RDMACTL_FILE COLUMN: "perftest rdmactl", one
	# line per round; fails unless every round has both.
	rounds() {
		[ "$(wc -l <"$1")" = "$(wc -l <"$2")" ] || return 1
		paste <(awk -v c="$3" '{print $c}' "$1") <(awk -v c="$3" '{print $c}' "$2")
	}
	# paired PERFTEST_FILE RDMACTL_FILE COLUMN: the median of the
	# per-round ratios rdmactl/perftest (the two ran back to back, so a
	# slow spell of the host hits both); "-" unless every round has both.
	paired() {
		local p r
		if ! p=$(rounds "$1" "$2" "$3"); then
			echo -
			return
		fi
		r=$(printf '%s\n' "$p" | awk '$1 > 0 {print $2 / $1}')
		if [ -z "$r" ]; then
			echo -
			return
		fi
		printf '%s\n' "$r" | middle | awk '{printf "%.3f\n", $1}'
	}
	# wins PERFTEST_FILE RDMACTL_FILE COLUMN higher|lower: "K/N", the
	# rounds in which rdmactl did at least as well as perftest. With no
	# real difference K/N hovers around half; 9 of 9 either way would be
	# a 1-in-256 fluke.
	wins() {
		local p
		if ! p=$(rounds "$1" "$2" "$3"); then
			echo -
			return
		fi
		printf '%s\n' "$p" |
			awk -v b="$4" '{n++; if ((b == "higher" && $2 >= $1) || (b == "lower" && $2 <= $1)) k++} END {printf "%d/%d\n", k, n}'
	}
	# ci PERFTEST_FILE RDMACTL_FILE COLUMN higher|lower: the geometric
	# mean of the per-round ratios with its 95% confidence interval
	# (Student's t on the log ratios), and the verdict it supports:
	# "ahead" or "behind" when the whole interval is on one side of 1,
	# "level" when it contains 1 (no difference this run can show).
	ci() {
		local p
		if ! p=$(rounds "$1" "$2" "$3"); then
			echo "- - -"
			return
		fi
		printf '%s\n' "$p" |
			awk -v b="$4" '$1 > 0 && $2 > 0 {x = log($2 / $1); n++; s += x; ss += x * x}
			END {
				if (n < 2) { print "- - -"; exit }
				split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045 2.042", t, " ")
				df = n - 1; q = (df <= 30) ? t[df] : 2.042
				m = s / n; v = (ss - n * m * m) / df; if (v < 0) v = 0
				h = q * sqrt(v / n); lo = exp(m - h); hi = exp(m + h)
				if ((b == "higher" && lo > 1) || (b == "lower" && hi < 1)) verdict = "ahead"
				else if ((b == "higher" && hi < 1) || (b == "lower" && lo > 1)) verdict = "behind"
				else verdict = "level"
				printf "%.3f %.2f-%.2f %s\n", exp(m), lo, hi, verdict
			}'
	}
	row() { # label kind size column better(higher|lower); tools $A (base) and $B
		local p m pf=$dir/$A-$2-$3 mf=$dir/$B-$2-$3
		[ -s "$pf" ] && [ -s "$mf" ] || return 0 # not in CONFIGS, or an old KEEP dir
		p=$(median "$pf" "$4")
		m=$(median "$mf" "$4")
		local g
		read -r -a g <<<"$(ci "$pf" "$mf" "$4" "$5")"
		awk -v l="$1" -v p="$p" -v m="$m" -v pr="$(paired "$pf" "$mf" "$4")" \
			-v w="$(wins "$pf" "$mf" "$4" "$5")" -v gm="${g[0]}" -v gci="${g[1]}" -v vd="${g[2]}" \
			-v ps="$(spread "$pf" "$4")" -v ms="$(spread "$mf" "$4")" 'BEGIN {
			ratio = (p > 0) ? m / p : 0
			printf "%-30s %11s %11s %7.3f %7s %6s %7s %10s  %-6s %21s %21s\n", l, p, m, ratio, pr, w, gm, gci, vd, ps, ms }'
	}
	echo
	echo "rdmactl perf vs perftest $(dpkg-query -W -f '${Version}' perftest 2>/dev/null || echo '?'), rxe1 -> rxe0, $2"
	[ -z "${3:-}" ] || echo "$3"
	echo "rdmactl: the detached loop (the default on rxe); plain: rdmactl --loop plain (internal/perf/rtloop)"
	[ -z "$(find "$dir" -maxdepth 1 -name "base-*" -print -quit)" ] || echo "base: the BASE binary, run as rdmactl is"
	local A B
	for pair in "perftest rdmactl" "perftest plain" "rdmactl plain" "base rdmactl"; do
		read -r A B <<<"$pair"
		[ -n "$(find "$dir" -maxdepth 1 -name "$B-*" -print -quit)" ] || continue
		section
	done
}

# section: one table of $B against $A (the ratio is B over A), from $dir.
section() {
	echo
	printf "%-30s %11s %11s %7s %7s %6s %7s %10s  %-6s %21s %21s\n" "metric" "$A" "$B" "ratio" "paired" "wins" "gmean" "95% CI" "verdict" "$A min-max" "$B min-max"
	row "write BW avg 64 B [MB/s]" bw 64 4 higher
	row "write msg rate 64 B [Mpps]" bw 64 5 higher
	row "write BW avg 4 KiB [MB/s]" bw 4096 4 higher
	row "write msg rate 4 KiB [Mpps]" bw 4096 5 higher
	row "write BW avg 64 KiB [MB/s]" bw 65536 4 higher
	row "write msg rate 64 KiB [Mpps]" bw 65536 5 higher
	row "write lat median 2 B [us]" lat 2 5 lower
	row "write lat p99 2 B [us]" lat 2 8 lower
	row "write lat median 4 KiB [us]" lat 4096 5 lower
	row "write lat p99 4 KiB [us]" lat 4096 8 lower
	row "lat median 2 B, from samples" latu 2 1 lower
	row "lat p99 2 B, from samples" latu 2 2 lower
	row "lat median 4 KiB, from samples" latu 4096 1 lower
	row "lat p99 4 KiB, from samples" latu 4096 2 lower
	# KPATH=1 runs only
	row "kernel path 2 B [us/msg]" kpath 2 1 lower
	row "kernel path 4 KiB [us/msg]" kpath 4096 1 lower
	local fast
	fast=$(mktemp -d)
	fastrows 2 "$fast"
	fastrows 4096 "$fast"
	dir=$fast row "lat median 2 B, fast kernel" lat 2 5 lower
	dir=$fast row "lat p99 2 B, fast kernel" lat 2 8 lower
	dir=$fast row "lat median 4 KiB, fast kernel" lat 4096 5 lower
	dir=$fast row "lat p99 4 KiB, fast kernel" lat 4096 8 lower
	dir=$fast row "lat median 2 B, samples, fast kernel" latu 2 1 lower
	dir=$fast row "lat p99 2 B, samples, fast kernel" latu 2 2 lower
	dir=$fast row "lat median 4 KiB, samples, fast kernel" latu 4096 1 lower
	dir=$fast row "lat p99 4 KiB, samples, fast kernel" latu 4096 2 lower
	rm -rf "$fast"
}

# fastrows SIZE OUT: writes OUT/TOOL-lat-SIZE and OUT/TOOL-latu-SIZE,
# the latency rows of the rounds in which both tools' ($A, $B) kernel path
# (KPATH=1) ran at full speed: at most 1.25 times the fastest run's of
# that size. Nothing without kernel path rows for every round.
fastrows() {
	local pk=$dir/$A-kpath-$1 mk=$dir/$B-kpath-$1 kind
	for kind in lat latu; do
		local pl=$dir/$A-$kind-$1 ml=$dir/$B-$kind-$1
		[ -s "$pk" ] && [ -s "$mk" ] && [ -s "$pl" ] && [ -s "$ml" ] || continue
		local n
		n=$(wc -l <"$pl")
		[ "$(wc -l <"$ml")" = "$n" ] && [ "$(wc -l <"$pk")" = "$n" ] && [ "$(wc -l <"$mk")" = "$n" ] || continue
		local band
		band=$(cat "$pk" "$mk" | awk 'NR == 1 || $1 < lo {lo = $1} END {print lo * 1.25}')
		paste -d '|' "$pk" "$mk" "$pl" "$ml" | awk -F '|' -v band="$band" -v po="$2/$A-$kind-$1" -v mo="$2/$B-$kind-$1" '{
			split($1, p, " "); split($2, m, " ")
			if (p[1] <= band && m[1] <= band) { print $3 >po; print $4 >mo }
		}'
	done
}

# samplestats: reads a latency client's output with -U samples ("#, usec",
# then "N, value" lines) and prints "MEDIAN P99 N": the median (the mean
# of the two middle samples when N is even) and the nearest-rank p99 (the
# ceil(0.99*N)-th smallest), the same estimators for both tools.
samplestats() {
	awk '/^#, usec/ {s = 1; next} s && /^[0-9]+, / {print $2; next} s {exit}' | sort -g |
		awk '{v[NR] = $1} END {
			if (NR == 0) { print "0 0 0"; exit }
			m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			k = int(0.99 * NR); if (k < 0.99 * NR) k++
			printf "%.3f %.3f %d\n", m, v[k], NR
		}'
}

if [ "${1:-}" = "--samplestats" ]; then
	samplestats # for the tests: stdin to stdout
	exit 0
fi

if [ "${1:-}" = "--table" ]; then
	# --table DIR...: the table again from kept rows (KEEP=DIR), pooled
	# over the DIRs (say, two runs' KEEP directories).
	shift
	pool=$(mktemp -d)
	trap 'rm -rf "$pool"' EXIT
	for d in "$@"; do
		for f in "$d"/*-*-*; do cat "$f" >>"$pool/$(basename "$f")"; done
	done
	table "$pool" "pooled rounds from: $*"
	exit 0
fi

if [ "${1:-}" = "--guest" ]; then
	shift
	R=$1 ROUNDS=$2 BW_ITERS=$3 LAT_ITERS=$4 BASE=${5:-}
	SRV=10.77.0.1
	out=$(mktemp -d /tmp/bench-perftest.XXXXXX)
	port=19000
	T=/sys/kernel/tracing
	# ktrace_start, ktrace_stop (KPATH=1): trace the NET_RX softirqs
	# from here on; print "US COUNT": the mean over the vCPUs of the
	# median time a softirq took on each (a half round trip carries one
	# message from each side, and a vCPU can be slow alone), and how many
	# there were.
	# The events are set up once and stay enabled (tracing_on switches
	# the recording): in this kernel, writing an event's filter after
	# disabling it hung the next run's setup.
	ktrace_set=
	ktrace_start() {
		if [ -z "$ktrace_set" ]; then
			[ -e $T/trace ] || mount -t tracefs none $T
			echo 0 >$T/tracing_on
			echo 16384 >$T/buffer_size_kb
			local e
			for e in softirq_entry softirq_exit; do
				echo 'vec == 3' >$T/events/irq/$e/filter
				echo 1 >$T/events/irq/$e/enable
			done
			ktrace_set=1
		fi
		echo >$T/trace
		echo 1 >$T/tracing_on
	}
	ktrace_stop() {
		echo 0 >$T/tracing_on
		# "... [001] ..s1. 12.345678: softirq_entry: vec=3 ...": pair
		# each CPU's entry with its exit.
		awk '/ softirq_(entry|exit): / {
			for (i = 1; i < NF; i++) if ($i ~ /^\[[0-9]+\]$/) cpu = $i
			for (i = 1; i < NF; i++) if ($(i + 1) == "softirq_entry:" || $(i + 1) == "softirq_exit:") break
			t = $i; sub(/:$/, "", t)
			if ($(i + 1) == "softirq_entry:") in_[cpu] = t
			else if (cpu in in_) { print cpu, (t - in_[cpu]) * 1e6; delete in_[cpu] }
		}' $T/trace | sort -k1,1 -k2g | awk '
			function flush() { if (n) { sum += v[int((n + 1) / 2)]; cpus++ }; n = 0 }
			$1 != c { flush(); c = $1 }
			{ v[++n] = $2; all++ }
			END { flush(); if (cpus) printf "%.1f %d\n", sum / cpus, all; else print "0 0" }'
	}
	# one TOOL KIND SIZE ROUND: run one server/client pair, append the
	# client's result row to $out/TOOL-KIND-SIZE.
	one() {
		local tool=$1 kind=$2 size=$3 iters
		if [ "$kind" = bw ]; then iters=$BW_ITERS; else iters=$LAT_ITERS; fi
		port=$((port + 1))
		local args=(-s "$size" -n "$iters" -p "$port")
		local srv cli
		if [ "$tool" = perftest ]; then
			srv=(ib_write_"$kind" -d rxe0 "${args[@]}")
			cli=(ib_write_"$kind" -d rxe1 "${args[@]}" "$SRV")
			if [ "$kind" = lat ]; then cli+=(-U); fi
		else
			local lat=()
			[ "$kind" = lat ] && lat=(--lat)
			# rdmactl: the loop the process selects (detached on rxe);
			# plain: the fallback loop, forced.
			[ "$tool" = plain ] && args+=(--loop plain)
			local bin=$R
			[ "$tool" = base ] && bin=$BASE
			srv=("$bin" perf write "${lat[@]}" -d rxe0 "${args[@]}")
			cli=("$bin" perf write "${lat[@]}" -d rxe1 "${args[@]}" "$SRV")
			if [ "$kind" = lat ]; then cli+=(-U); fi
		fi
		echo "bench: $tool $kind $size" >&2
		timeout 60 "${srv[@]}" >"$out/srv.txt" 2>&1 &
		local spid=$!
		# perftest clients do not retry: wait until the server listens
		# (perftest on IPv4, /proc/net/tcp; rdmactl on IPv6, tcp6). A
		# row reads "N: ADDR:PORT REMADDR:0000 0A", one space apart; a
		# pattern that does not match waits out the loop, ~30 s a run.
		local hex i
		hex=$(printf ':%04X' "$port")
		for ((i = 0; i < 100; i++)); do
			grep -qE "$hex 0+:0000 0A" /proc/net/tcp /proc/net/tcp6 && break
			sleep 0.1
		done
		local kpath=
		[ "${KPATH:-}" = 1 ] && [ "$kind" = lat ] && kpath=1
		[ -z "$kpath" ] || ktrace_start
		if ! timeout 45 "${cli[@]}" >"$out/cli.txt" 2>&1; then
			[ -z "$kpath" ] || ktrace_stop >/dev/null
			echo "bench: $tool $kind $size failed:" >&2
			cat "$out/cli.txt" "$out/srv.txt" >&2
			kill "$spid" 2>/dev/null || true
			wait "$spid" 2>/dev/null || true
			return 1
		fi
		[ -z "$kpath" ] || ktrace_stop >>"$out/$tool-kpath-$size"
		wait "$spid" || true
		# The first row under the "#bytes" header.
		awk '/^ #bytes/ {h=1; next} h && $1 ~ /^[0-9]+$/ {print; exit}' "$out/cli.txt" >>"$out/$tool-$kind-$size"
		[ "$kind" != lat ] || samplestats <"$out/cli.txt" >>"$out/$tool-latu-$size"
	}
	# try: one run, retried once (rxe under TCG occasionally NAKs a new QP
	# that reuses the number of one whose packets are still in flight).
	try() {
		sleep 1 # let the previous pair's retransmissions die out
		one "$@" || { echo "bench: retrying $*" >&2; sleep 2; one "$@"; }
	}
	configs=("bw 64" "bw 4096" "bw 65536" "lat 2" "lat 4096")
	if [ -n "${CONFIGS:-}" ]; then
		IFS=, read -r -a configs <<<"$CONFIGS"
	fi
	tools=(perftest rdmactl plain)
	[ -z "$BASE" ] || tools+=(base)
	for ((r = 0; r < ROUNDS; r++)); do
		for c in "${configs[@]}"; do
			set -- $c
			# Reverse the order of the tools round by round.
			order=("${tools[@]}")
			if ((r % 2 == 1)); then
				order=()
				for ((i = ${#tools[@]} - 1; i >= 0; i--)); do order+=("${tools[i]}"); done
			fi
			for tool in "${order[@]}"; do
				try "$tool" "$1" "$2"
			done
		done
	done
	table "$out" "medians of $ROUNDS alternating runs" \
		"(bw: -n $BW_ITERS, lat: -n $LAT_ITERS; TCG guest: compare ratios, not absolute figures)"
	if [ -n "${KEEP:-}" ]; then
		mkdir -p "$KEEP" && cp "$out"/*-*-* "$KEEP"/ && echo "raw result rows kept in $KEEP"
	fi
	rm -rf "$out"
	exit 0
fi

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
ROUNDS=${1:-3}
# Unset RDMACTL: build bin/rdmactl from this tree (a cached build when
# nothing changed), never bench a stale binary.
if [ -z "${RDMACTL:-}" ]; then
	RDMACTL=bin/rdmactl
	# make build: the shipped binary's flags (version stamps, the heap's
	# THP setting), not a plain go build's.
	${MAKE:-make} --no-print-directory build GO="${GO:-go}" >&2
fi
RDMACTL=$(readlink -f "$RDMACTL")
[ -z "${BASE:-}" ] || BASE=$(readlink -f "$BASE")
share=()
if [ -n "${KEEP:-}" ]; then
	KEEP=$(mkdir -p "$KEEP" && readlink -f "$KEEP")
	share=(--share "$KEEP") # the guest's writes elsewhere stay in the guest
fi
# A round takes about 1.5 min under TCG (three tools; two more with BASE), up to 6 on a slow host; vm/run's
# default limit is 30 min.
exec "${VMRUN:-vm/run}" --cpus "${CPUS:-2}" --timeout $((600 + ROUNDS * 600)) "${share[@]}" -- env CONFIGS="${CONFIGS:-}" KEEP="${KEEP:-}" KPATH="${KPATH:-}" "$PWD/scripts/bench-perftest.sh" --guest "$RDMACTL" "$ROUNDS" "${BW_ITERS:-2000}" "${LAT_ITERS:-1000}" "${BASE:-}"
