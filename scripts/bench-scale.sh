#!/bin/bash
# scripts/bench-scale.sh: how rdmactl's inspection commands scale with the
# number of RDMA devices, against the tools they replace. For each N in NS
# (default "4 16 64 128") one VM boots with N rxe devices; in it each
# command and its reference run alternately ROUNDS times (default 15) after
# one warm-up each, and the script prints the median wall time of each, the
# ratio rdmactl/reference (of the medians; and the median of the rounds'
# own ratios, each rdmactl run over the reference run right after it, with
# how many rounds rdmactl was the faster: a slow drift of the guest moves
# both runs of a round alike), each command's growth from 16 to 128 devices
# (its time at the largest N over its time at 16), and the peak RSS of each
# rdmactl command at the largest N (GNU time's %M, from the host root the
# guest sees). Figures only; nothing is asserted. Under TCG the guest CPU is
# emulated: compare ratios and growth, not absolute numbers.
#
# A command whose warm-up takes longer than CAP_MS (default 20000) is not
# repeated: that one run is its figure, marked with '*'.
#
# ROUNDS: at 128 devices a ratio from 15 rounds moves by about 0.1 from
# one run to the next (link show on 6.1, the same code, two runs an hour
# apart: 0.89 and 1.09); ROUNDS=31 narrows that, at twice the time
# (docs/scale.md).
#
# Environment: RDMACTL (binary; default bin/rdmactl), VMRUN (default vm/run),
# NS, ROUNDS, CAP_MS, VMFLAGS (more vm/run options), BASE (another rdmactl
# binary, e.g. one built from main: also timed in the same rounds, in a
# column base_ms, so that a change is compared side by side in one run).
#
# Inside the VM it is run as: bench-scale.sh --guest BIN N [BASEBIN]
set -euo pipefail

# Each row: name | rdmactl arguments | reference command.
CMDS=(
	'link show|link show|rdma link show'
	'-d link show|-d link show|rdma -d link show'
	'dev show|dev show|rdma dev show'
	'-d dev show|-d dev show|rdma -d dev show'
	'res|res|rdma res show'
	'gids|gids|ibv_devinfo -v'
	'dev query|dev query|ibv_devinfo -v'
	'counters|counters|rdma statistic show'
)

guest() {
	local bin=$1 n=$2 base=${3:-} rounds=${ROUNDS:-15} cap=${CAP_MS:-20000}
	# As bench-link.sh: the binary from the guest's tmpfs, not over 9p.
	install -m 0755 "$bin" /usr/local/bin/rdmactl-bench
	[ -z "$base" ] || install -m 0755 "$base" /usr/local/bin/rdmactl-base
	# ms CMD...: CMD's wall time in ms (one decimal), from bash's own clock
	# ($EPOCHREALTIME, bash 5; its digits are the microseconds). Timing
	# with date(1) put two more forks and execs inside every timed run,
	# ~90 ms under TCG whatever the command, which pulled every ratio
	# toward 1.
	[ -n "${EPOCHREALTIME:-}" ] || { echo "bench-scale.sh: the guest's bash has no \$EPOCHREALTIME (bash 5)" >&2; exit 1; }
	ms() {
		local s=${EPOCHREALTIME//[!0-9]/} e
		"$@" >/dev/null 2>&1 || true
		e=${EPOCHREALTIME//[!0-9]/}
		printf '%d.%d\n' $(((e - s) / 1000)) $(((e - s) % 1000 / 100))
	}
	median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
	# paired A... B...: the median of the rounds' ratios A[i]/B[i], and
	# "k/n": in k of the n rounds A[i] < B[i].
	paired() {
		local n=$(($# / 2)) ratios k
		ratios=$(printf '%s\n' "$@" | awk -v n="$n" 'NR <= n { x[NR] = $1; next } { printf "%.4f\n", ($1 > 0 ? x[NR - n] / $1 : 0) }')
		k=$(printf '%s\n' "$@" | awk -v n="$n" 'NR <= n { x[NR] = $1; next } x[NR - n] < $1 { k++ } END { print k + 0 }')
		# shellcheck disable=SC2086 # one ratio per word
		printf '%.2f %d/%d\n' "$(median $ratios)" "$k" "$n"
	}
	local row name args ref a b c wa wb wc mark
	for row in "${CMDS[@]}"; do
		IFS='|' read -r name args ref <<<"$row"
		# shellcheck disable=SC2086 # word splitting of the arguments is wanted
		wa=$(ms rdmactl-bench $args)
		# shellcheck disable=SC2086
		wb=$(ms $ref)
		wc=0
		# shellcheck disable=SC2086
		[ -z "$base" ] || wc=$(ms rdmactl-base $args)
		a=() b=() c=() mark=
		if [ "${wa%.*}" -gt "$cap" ] || [ "${wb%.*}" -gt "$cap" ] || [ "${wc%.*}" -gt "$cap" ]; then
			a=("$wa") b=("$wb") c=("$wc") mark='*'
		else
			for _ in $(seq "$rounds"); do
				# shellcheck disable=SC2086
				a+=("$(ms rdmactl-bench $args)")
				# shellcheck disable=SC2086
				b+=("$(ms $ref)")
				# shellcheck disable=SC2086
				[ -z "$base" ] || c+=("$(ms rdmactl-base $args)")
			done
		fi
		[ -n "$base" ] || c=(-)
		local rss=-
		if [ -x /usr/bin/time ]; then
			# shellcheck disable=SC2086
			rss=$(/usr/bin/time -f %M -o /tmp/rss rdmactl-bench $args >/dev/null 2>&1; tail -n 1 /tmp/rss)
		fi
		local pr pk
		read -r pr pk <<<"$(paired "${a[@]}" "${b[@]}")"
		echo "ROW|$n|$name|$ref|$(median "${a[@]}")$mark|$(median "${b[@]}")|$rss|$(median "${c[@]}")|$pr|$pk"
	done
}

if [ "${1:-}" = --guest ]; then
	guest "$2" "$3" "${4:-}"
	exit 0
fi

RDMACTL=${RDMACTL:-bin/rdmactl}
VMRUN=${VMRUN:-vm/run}
NS=${NS:-4 16 64 128}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for n in $NS; do
	echo "bench-scale: $n devices..." >&2
	# shellcheck disable=SC2086
	$VMRUN ${VMFLAGS:-} --rxe "$n" -- env ROUNDS="${ROUNDS:-15}" CAP_MS="${CAP_MS:-20000}" \
		"$0" --guest "$RDMACTL" "$n" ${BASE:+"$BASE"} | grep '^ROW|' >>"$OUT"
done
largest=${NS##* }
awk -F'|' -v big="$largest" '
	function num(s) { sub(/\*$/, "", s); return s + 0 }
	{
		n = $2; c = $3
		if (!(c in seen)) { seen[c] = 1; order[++nc] = c; ref[c] = $4 }
		if (!(n in nseen)) { nseen[n] = 1; ns[++nn] = n }
		a[c, n] = $5; b[c, n] = $6; rss[c, n] = $7; base[c, n] = $8; pr[c, n] = $9; pk[c, n] = $10
	}
	END {
		printf "%-14s %-22s %5s %11s %11s %7s %7s %7s %9s\n", "command", "reference", "N", "rdmactl_ms", "ref_ms", "ratio", "paired", "faster", "base_ms"
		for (i = 1; i <= nc; i++) {
			c = order[i]
			for (j = 1; j <= nn; j++) {
				n = ns[j]
				if (!((c, n) in a)) continue
				r = num(b[c, n]) > 0 ? sprintf("%.2f", num(a[c, n]) / num(b[c, n])) : "-"
				printf "%-14s %-22s %5s %11s %11s %7s %7s %7s %9s\n", c, ref[c], n, a[c, n], b[c, n], r, pr[c, n], pk[c, n], base[c, n]
			}
		}
		printf "\n%-14s %14s %14s %14s\n", "command", "growth_" big "/16", "ref_growth", "rss_MB@" big
		for (i = 1; i <= nc; i++) {
			c = order[i]
			g = ((c, 16) in a) && num(a[c, 16]) > 0 && ((c, big) in a) ? sprintf("%.1f", num(a[c, big]) / num(a[c, 16])) : "-"
			h = ((c, 16) in b) && num(b[c, 16]) > 0 && ((c, big) in b) ? sprintf("%.1f", num(b[c, big]) / num(b[c, 16])) : "-"
			m = ((c, big) in rss) && rss[c, big] != "-" ? sprintf("%.1f", rss[c, big] / 1024) : "-"
			printf "%-14s %14s %14s %14s\n", c, g, h, m
		}
		print "\n* one run (its warm-up exceeded CAP_MS); otherwise the median of ROUNDS alternating runs"
	}' "$OUT"
