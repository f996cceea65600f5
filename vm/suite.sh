#!/bin/bash
# vm/suite.sh DIR: runs inside the VM (vm/vmtest starts it through vm/run).
#
# Runs every test binary DIR/<package dir>.test with -test.v in its package
# directory (so testdata/ is found), one after the other, each under a
# timeout, then prints a summary. Each binary runs RUN if given, else only
# the tests of its vmtest files (DIR/<package dir>.run, from vm/vmtest). A binary fails when it exits non-zero,
# times out, prints "--- SKIP" (kernel tests must never pass by skipping),
# or leaves RDMA resources behind or the links changed (`rdma res show`,
# `rdma link show` differ afterwards: the next package would see them).
#
# Environment: RUN (-test.run), VMTEST_TIMEOUT (seconds per binary),
# VMTEST_BUILD_FAILED (packages that did not build, for the summary).
set -uo pipefail

[ "${RDMACTL_VM:-}" = 1 ] || { echo "suite.sh: run me inside the VM (make vmtest)" >&2; exit 2; }
DIR=${1:?usage: suite.sh DIR}
ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
cd "$ROOT" || exit 125
PER=${VMTEST_TIMEOUT:-600}
export RDMACTL_BIN=$ROOT/bin/rdmactl
export RDMACTL_VM=1
[ -x "$RDMACTL_BIN" ] || echo "suite.sh: warning: $RDMACTL_BIN missing (make build)" >&2

mapfile -t bins < <(cd "$DIR" && find . -name '*.test' | sed 's|^\./||' | LC_ALL=C sort)
args=(-test.v -test.count=1 "-test.timeout=${PER}s")

summary=()
failed=0
passed_tests=0
t_all=$(date +%s)
for b in "${bins[@]}"; do
	pkg=${b%.test}
	log=$ROOT/$DIR/$pkg.log
	# RUN, or the package's vmtest tests (vm/vmtest lists them in .run).
	run=${RUN:-}
	if [ -z "$run" ] && [ -s "$ROOT/$DIR/$pkg.run" ]; then run="^($(cat "$ROOT/$DIR/$pkg.run"))\$"; fi
	before=$(rdma res show 2>&1; rdma link show 2>&1)
	echo "=== package $pkg"
	t=$(date +%s)
	# -test.timeout makes Go print the stuck goroutines; timeout(1) is the
	# backstop if the binary is wedged in the kernel.
	(cd "$ROOT/$pkg" && timeout -k 10 $((PER + 30)) "$ROOT/$DIR/$b" "${args[@]}" ${run:+"-test.run=$run"}) 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	secs=$(($(date +%s) - t))
	after=$(rdma res show 2>&1; rdma link show 2>&1)
	npass=$(grep -cE '^ *--- PASS' "$log")
	nfail=$(grep -cE '^ *--- FAIL' "$log")
	nskip=$(grep -cE '^ *--- SKIP' "$log")
	passed_tests=$((passed_tests + npass))
	status=ok
	why=""
	if [ "$rc" = 124 ] || [ "$rc" = 137 ] || grep -q '^panic: test timed out' "$log"; then
		status=FAIL why="timed out after ${PER}s"
	elif [ "$rc" != 0 ]; then
		status=FAIL why="exit $rc"
	elif [ "$nskip" -gt 0 ]; then
		status=FAIL why="$nskip test(s) skipped: kernel tests must not skip"
	elif [ "$npass" = 0 ]; then
		status=none why="no test ran"
	fi
	if [ "$before" != "$after" ]; then
		echo "suite.sh: $pkg left RDMA resources or links changed:"
		diff <(echo "$before") <(echo "$after") | sed 's/^/    /'
		[ "$status" = FAIL ] && why="$why; leaked resources" || why="leaked resources or changed links (rdma res/link show)"
		status=FAIL
	fi
	[ "$status" = FAIL ] && failed=$((failed + 1))
	summary+=("$(printf '%-5s %-28s %5ss  pass %-3d fail %-3d skip %-3d %s' "$status" "$pkg" "$secs" "$npass" "$nfail" "$nskip" "$why")")
	# Name the failed and skipped top-level tests, so the summary says what to rerun.
	bad=$(grep -E '^--- (FAIL|SKIP)' "$log" | awk '{ print $3 }' | paste -sd' ')
	[ -n "$bad" ] && summary+=("      $bad")
done
for p in ${VMTEST_BUILD_FAILED:-}; do
	summary+=("$(printf '%-5s %-28s %6s  %s' FAIL "$p" - "did not build")")
	failed=$((failed + 1))
done

echo
echo "=== vmtest summary ($(uname -r), $(($(date +%s) - t_all))s in the VM)"
printf '%s\n' "${summary[@]}"
if [ "$failed" -gt 0 ]; then
	echo "FAIL: $failed package(s) failed"
	exit 1
fi
if [ "$passed_tests" = 0 ]; then
	echo "FAIL: no test ran${RUN:+ (RUN=$RUN matched nothing)}"
	exit 1
fi
echo "PASS: $passed_tests test(s) in ${#bins[@]} package(s)"
