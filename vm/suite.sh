#!/bin/bash
# vm/suite.sh DIR: runs inside the VM (vm/vmtest starts it through vm/run).
#
# Runs every test binary DIR/<package dir>.test with -test.v in its package
# directory (so testdata/ is found), one after the other, each under a
# timeout and a watchdog for silence (below), then prints a summary. Each
# binary runs RUN if given, else only the tests of its vmtest files
# (DIR/<package dir>.run, from vm/vmtest). A binary fails when it exits
# non-zero, times out, falls silent, prints "--- SKIP" (kernel tests must
# never pass by skipping), or leaves RDMA resources behind or the links
# changed (`rdma res show`, `rdma link show` differ afterwards: the next
# package would see them).
#
# With VMTEST_COUNT=N (make vmtest COUNT=N) all of that runs N times in
# this one boot: each run prints a line "=== run I/N: PASS" or "=== run
# I/N: FAIL" with the failed tests, the summary counts each failed test's
# runs, and the suite passes only if every run did. Each run's log is
# DIR/<package dir>.log, or DIR/<package dir>.runI.log when N > 1.
#
# With VMTEST_VARIANT="PKG ENV REGEX" (and RUN unset), PKG's tests that
# match REGEX run in a second invocation of its binary with the
# environment variable ENV (NAME=VALUE) set, and not in the first: the
# summary has a line for each ("PKG" and "PKG [ENV]"). vm/vmtest sets it
# for one kernel series (VMTEST_VARIANT there).
#
# Environment: RUN (-test.run), VMTEST_TIMEOUT (seconds per binary),
# VMTEST_STALL (seconds without output, 0: off), VMTEST_COUNT (runs, 1),
# VMTEST_BUILD_FAILED (packages that did not build, for the summary),
# VMTEST_VARIANT (above).
set -uo pipefail

[ "${RDMACTL_VM:-}" = 1 ] || { echo "suite.sh: run me inside the VM (make vmtest)" >&2; exit 2; }
DIR=${1:?usage: suite.sh DIR}
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 125
PER=${VMTEST_TIMEOUT:-600}
export RDMACTL_BIN=$ROOT/bin/rdmactl
export RDMACTL_VM=1

mapfile -t bins < <(cd "$DIR" && find . -name '*.test' | sed 's|^\./||' | LC_ALL=C sort)

# The binaries run from the guest's memory, as from a user's disk: over
# the 9p share (cache=mmap) each exec pages its binary in again, 613 and
# 637 ms for `rdmactl version` against 65 and 40 from the guest's /tmp
# (6.1, 20 runs each), and tests exec rdmactl and re-exec their own
# binaries. The copies keep their names (top's tests find "rdmactl" by
# its command name) in a directory other users (the permission tests)
# can enter.
LOCAL=$(mktemp -d /tmp/vmtest-bin.XXXXXX) && chmod 0755 "$LOCAL" || exit 125
if [ -x "$RDMACTL_BIN" ]; then
	install -m 0755 "$RDMACTL_BIN" "$LOCAL/rdmactl" || exit 125
	RDMACTL_BIN=$LOCAL/rdmactl
else
	echo "suite.sh: warning: $RDMACTL_BIN missing (make build)" >&2
fi
for b in "${bins[@]}"; do
	install -D -m 0755 "$DIR/$b" "$LOCAL/$b" || exit 125
done
# rdmactl as of cmd/rdmactl/testdata/outputs-base, built by vm/vmtest.
if [ -x "$DIR/rdmactl-base" ]; then
	install -m 0755 "$DIR/rdmactl-base" "$LOCAL/rdmactl-base" || exit 125
	export RDMACTL_BASE_BIN=$LOCAL/rdmactl-base
fi
args=(-test.v -test.count=1 "-test.timeout=${PER}s")
# A hung test is named, and its goroutines dumped, well before vm/run's
# own timeout kills the VM (which names no test and dumps no goroutine):
#   - -test.timeout=PER: Go's own panic, with every goroutine's stack;
#   - STALL seconds without a line of output (VMTEST_STALL, 0: off): a test
#     that waits on something that never comes, found minutes before PER;
#   - PER+30 s: the backstop, for a binary whose timer cannot fire (every
#     P busy in loops that do not yield).
# The last two print the binary's processes (kernel stacks of the blocked
# ones) and the VM's RDMA and link state, then send SIGQUIT, on which the
# Go runtime prints every goroutine (GOTRACEBACK=crash: also those running
# on other threads) and exits; SIGKILL 15 s later if it has not.
STALL=${VMTEST_STALL:-300}
[[ $STALL =~ ^[0-9]+$ ]] || { echo "suite.sh: VMTEST_STALL must be seconds" >&2; exit 2; }

# last_test LOG: the test the binary started last (its "=== RUN" line).
last_test() { grep -aE '^=== (RUN|CONT) ' "$1" | tail -n1 | awk '{ print $3 }'; }

# group_pids PGID [all]: the processes of a process group; with "all" also
# those whose main thread has exited (Z) while another thread has not: a
# process whose exit waits on a thread blocked in the kernel. comm, the
# second field of /proc/PID/stat, may hold spaces and parentheses: the
# fields are counted after its last ")".
group_pids() {
	cat /proc/[0-9]*/stat 2>/dev/null |
		awk -v g="$1" -v all="${2:-}" '{ pid = $1; sub(/^.*\) /, ""); if ($3 == g && ($1 != "Z" || all != "")) print pid }'
}

# dump_state PGID: the group's processes, each thread's state and kernel
# stack when blocked in the kernel (D), and the VM's RDMA and link state.
dump_state() {
	local p t st
	echo "--- processes of the test binary (process group $1): pid state time command; threads in D with kernel stacks"
	for p in $(group_pids "$1" all); do
		[ -r "/proc/$p/cmdline" ] || continue
		printf '%s %s %ss %s\n' "$p" "$(awk '{ sub(/^.*\) /, ""); print $1 }' "/proc/$p/stat" 2>/dev/null)" \
			"$(ps -o etimes= -p "$p" 2>/dev/null | tr -d ' ')" "$(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-200)"
		for t in /proc/"$p"/task/*; do
			st=$(awk '{ sub(/^.*\) /, ""); print $1 }' "$t/stat" 2>/dev/null)
			[ "$st" = D ] || continue
			echo "  thread ${t##*/} in D, wchan $(cat "$t/wchan" 2>/dev/null):"
			sed 's/^/    /' "$t/stack" 2>/dev/null
		done
	done
	echo "--- rdma res show qp; rdma link show; tc qdisc show (netem left behind?)"
	timeout 10 rdma res show qp 2>&1
	timeout 10 rdma link show 2>&1
	timeout 10 tc qdisc show 2>&1 | grep -v 'noqueue'
	echo "--- goroutines (SIGQUIT)"
}

variant_pkg="" variant_env="" variant_re=""
if [ -n "${VMTEST_VARIANT:-}" ] && [ -z "${RUN:-}" ]; then
	read -r variant_pkg variant_env variant_re <<<"$VMTEST_VARIANT"
	[[ $variant_env == [A-Z_]*=* ]] && [ -n "$variant_re" ] ||
		{ echo "suite.sh: VMTEST_VARIANT must be \"PKG NAME=VALUE REGEX\"" >&2; exit 2; }
fi

COUNT=${VMTEST_COUNT:-1}
[[ $COUNT =~ ^[1-9][0-9]*$ ]] || { echo "suite.sh: VMTEST_COUNT must be a count of runs" >&2; exit 2; }

summary=()
failed=0
passed_tests=0
t_all=$(date +%s)
# run_bin B LOG [split|variant]: runs test binary B once, its output in
# LOG, and adds its line (and its failed tests' names) to summary; sets
# bin_failed and bin_bad (the failed and skipped tests, with their
# subtests). split: without VMTEST_VARIANT's tests; variant: only those,
# with its variable set.
run_bin() {
	local b=$1 log=$2 mode=${3:-} pkg run before after t pid hung size t0 t_out n rc secs left p teepid mirror
	local npass nfail nskip status why bad extra=() envs=()
	pkg=${b%.test}
	# RUN, or the package's vmtest tests (vm/vmtest lists them in .run).
	run=${RUN:-}
	if [ -z "$run" ] && [ -s "$ROOT/$DIR/$pkg.run" ]; then run="^($(cat "$ROOT/$DIR/$pkg.run"))\$"; fi
	case $mode in
	split) extra=("-test.skip=$variant_re") ;;
	variant)
		run=$variant_re envs=("$variant_env")
		pkg="$pkg [$variant_env]"
		;;
	esac
	before=$(timeout 60 rdma res show 2>&1; timeout 60 rdma link show 2>&1)
	echo "=== package $pkg"
	t=$(date +%s)
	# In a session of its own (setsid, no fork: the subshell leads no
	# group), so that its process group is its pid: what it started can be
	# found and ended with it. Its output goes through tee (fd 3) to this
	# script's stdout, which the host streams, to the log, and to a copy in
	# the guest's own /tmp whose size tells that output came. (Not the log's
	# size: on 6.12, 9p with cache=mmap keeps writes to a file held open in
	# the page cache for up to 30 s and stat asks the host, so the size lags
	# and a killed VM loses the tail of the log.)
	: >"$log"
	mirror=$(mktemp)
	exec 3> >(exec tee -a "$log" "$mirror")
	teepid=$!
	(exec 3>&- && cd "$ROOT/${b%.test}" && GOTRACEBACK=crash exec env "${envs[@]}" setsid "$LOCAL/$b" "${args[@]}" ${run:+"-test.run=$run"} "${extra[@]}") </dev/null >&3 2>&1 &
	pid=$!
	hung=""
	size=0 t0=$SECONDS t_out=$SECONDS
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		n=$(stat -c %s "$mirror" 2>/dev/null || echo 0)
		[ "$n" = "$size" ] || size=$n t_out=$SECONDS
		if [ "$STALL" -gt 0 ] && [ $((SECONDS - t_out)) -ge "$STALL" ]; then
			hung="no output for ${STALL}s"
		elif [ $((SECONDS - t0)) -ge $((PER + 30)) ]; then
			hung="still running $((PER + 30))s after it started (-test.timeout=${PER}s did not fire)"
		fi
		[ -z "$hung" ] && continue
		{
			echo "suite.sh: $pkg: $hung; last test started: $(last_test "$mirror")"
			dump_state "$pid"
		} >&3 2>&1
		kill -QUIT "$pid" 2>/dev/null
		for _ in $(seq 15); do kill -0 "$pid" 2>/dev/null && sleep 1; done
		kill -KILL "$pid" 2>/dev/null
		break
	done
	wait "$pid"
	rc=$?
	secs=$(($(date +%s) - t))
	after=$(timeout 60 rdma res show 2>&1; timeout 60 rdma link show 2>&1)
	# What it started and left running (the test's cleanups did not end it)
	# would hold RDMA resources and stall the next package: name and end it.
	left=$(group_pids "$pid")
	if [ -n "$left" ]; then
		echo "suite.sh: $pkg left processes running (killed now):"
		for p in $left; do echo "    $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"; done
		kill -KILL -- -"$pid" 2>/dev/null
	fi >&3
	# tee ends when the last writer is gone; one that escaped the group
	# (a daemon holding the binary's output) does not hold this script.
	exec 3>&-
	for _ in $(seq 10); do kill -0 "$teepid" 2>/dev/null && sleep 1; done
	kill "$teepid" 2>/dev/null
	wait "$teepid"
	rm -f "$mirror"
	npass=$(grep -acE '^ *--- PASS' "$log")
	nfail=$(grep -acE '^ *--- FAIL' "$log")
	nskip=$(grep -acE '^ *--- SKIP' "$log")
	passed_tests=$((passed_tests + npass))
	status=ok
	why=""
	if [ -n "$hung" ]; then
		status=FAIL why="$hung, in $(last_test "$log")"
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ] || grep -aq '^panic: test timed out' "$log"; then
		status=FAIL why="timed out after ${PER}s, in $(last_test "$log")"
	elif [ "$rc" != 0 ]; then
		status=FAIL why="exit $rc"
	elif [ "$nskip" -gt 0 ]; then
		status=FAIL why="$nskip test(s) skipped: kernel tests must not skip"
	elif [ "$npass" = 0 ]; then
		status=none why="no test ran"
	fi
	[ "$status" = FAIL ] && [ -n "$left" ] && why="$why; left processes running"
	if [ "$before" != "$after" ]; then
		echo "suite.sh: $pkg left RDMA resources or links changed:"
		diff <(echo "$before") <(echo "$after") | sed 's/^/    /'
		[ "$status" = FAIL ] && why="$why; leaked resources" || why="leaked resources or changed links (rdma res/link show)"
		status=FAIL
	fi
	[ "$COUNT" -gt 1 ] && pkg="$pkg#$i"
	summary+=("$(printf '%-5s %-28s %5ss  pass %-3d fail %-3d skip %-3d %s' "$status" "$pkg" "$secs" "$npass" "$nfail" "$nskip" "$why")")
	# Name the failed and skipped top-level tests, so the summary says what to rerun.
	bad=$(grep -aE '^--- (FAIL|SKIP)' "$log" | awk '{ print $3 }' | paste -sd' ')
	[ -n "$bad" ] && summary+=("      $bad")
	bin_failed=0
	[ "$status" = FAIL ] && bin_failed=1
	# Every failed or skipped test, subtests included; the binary's own
	# failure (a timeout, a leak) when no test is named (its reason is
	# in its summary line).
	bin_bad=$(grep -aE '^ *--- (FAIL|SKIP)' "$log" | awk '{ print $3 }' | paste -sd' ')
	[ "$status" = FAIL ] && [ -z "$bin_bad" ] && bin_bad="${b%.test}:no-test-named"
	return 0
}

declare -A fails_of # failed test -> runs it failed in
failed_runs=0
for ((i = 1; i <= COUNT; i++)); do
	[ "$COUNT" -gt 1 ] && echo "=== run $i/$COUNT"
	run_failed=0
	run_bad=()
	for b in "${bins[@]}"; do
		modes=("")
		[ "${b%.test}" = "$variant_pkg" ] && modes=(split variant)
		for m in "${modes[@]}"; do
			log=$ROOT/$DIR/${b%.test}${m:+.$m}.log
			[ "$COUNT" -gt 1 ] && log=$ROOT/$DIR/${b%.test}${m:+.$m}.run$i.log
			run_bin "$b" "$log" "$m"
			if [ "$bin_failed" = 1 ]; then
				failed=$((failed + 1))
				run_failed=1
			fi
			for x in $bin_bad; do
				run_bad+=("$x")
				fails_of[$x]=$((${fails_of[$x]:-0} + 1))
			done
		done
	done
	[ "$run_failed" = 1 ] && failed_runs=$((failed_runs + 1))
	if [ "$COUNT" -gt 1 ]; then
		if [ "$run_failed" = 1 ]; then
			echo "=== run $i/$COUNT: FAIL: ${run_bad[*]}"
		else
			echo "=== run $i/$COUNT: PASS"
		fi
	fi
done
for p in ${VMTEST_BUILD_FAILED:-}; do
	summary+=("$(printf '%-5s %-28s %6s  %s' FAIL "$p" - "did not build")")
	failed=$((failed + 1))
done

echo
runs_note=""
[ "$COUNT" -gt 1 ] && runs_note=", $COUNT runs"
echo "=== vmtest summary ($(uname -r), $(($(date +%s) - t_all))s in the VM$runs_note)"
printf '%s\n' "${summary[@]}"
if [ "$COUNT" -gt 1 ]; then
	echo "--- $((COUNT - failed_runs)) of $COUNT runs passed"
	for x in "${!fails_of[@]}"; do
		echo "--- FAIL in ${fails_of[$x]} of $COUNT runs: $x"
	done | LC_ALL=C sort
fi
if [ "$failed" -gt 0 ]; then
	echo "FAIL: $failed package(s) failed$([ "$COUNT" -gt 1 ] && echo " (package runs, in $failed_runs of $COUNT runs)")"
	exit 1
fi
if [ "$passed_tests" = 0 ]; then
	echo "FAIL: no test ran${RUN:+ (RUN=$RUN matched nothing)}"
	exit 1
fi
echo "PASS: $passed_tests test(s) in ${#bins[@]} package(s)"
