#!/bin/bash
# scripts/test-arm64.sh: the unit tests for GOARCH=arm64, under qemu user
# mode, on an amd64 Debian 12 host (make unit-arm64; CI step arm64).
#
#   1. installs what is missing through apt (as root or with sudo):
#      qemu-user-static, and an aarch64 cross gcc with the arm64 libc and
#      UAPI headers, which builds the tests' C oracles (struct layouts, mlx5
#      golden WQEs) for arm64, so that the Go layouts are compared with
#      arm64 C, not with the host's;
#   2. GOARCH=arm64 go vet ./... (with and without the vmtest tag);
#   3. builds each package's test binary (CGO_ENABLED=0 GOARCH=arm64
#      go test -c) and runs it with -test.v under qemu-aarch64-static, two
#      packages at a time (ARM64_JOBS, default the CPU count), in
#      its package directory (so testdata/ resolves). The binaries are run
#      through qemu explicitly: binfmt_misc is often not mounted in a
#      container. The C oracles are built with CC="aarch64-linux-gnu-gcc
#      -static" and run through $RDMACTL_TEST_EXEC, set here to qemu, for
#      the same reason, as is every program a test starts, the test binary
#      itself included (internal/testexec);
#   4. prints a summary: per package its tests passed, failed, skipped and
#      excluded, and the time.
#
# Fails if vet fails, if any package fails, or if no package ran.
# Usage: scripts/test-arm64.sh [PKG...]   (default ./...)
#        scripts/test-arm64.sh --prepare [PKG...]: steps 1 and 2, and every
#        test binary compiled but not run, so that a later run only links
#        and runs them (CI does this while the VM tests run; it needs no
#        CPU time of its own, the tests then do not share it).
set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
prepare=0
if [ "${1:-}" = --prepare ]; then
	prepare=1
	shift
fi
GO=${GO:-go}
QEMU=${QEMU:-/usr/bin/qemu-aarch64-static}
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
PACKAGES="qemu-user-static gcc-aarch64-linux-gnu libc6-dev-arm64-cross linux-libc-dev-arm64-cross libibverbs-dev"

# Tests that cannot work under qemu-user, one per line:
#   "IMPORT_PATH_SUFFIX TEST_REGEXP  # why"
# Each is passed to that package's binary as -test.skip and counted as
# excluded in the summary. Keep it empty if possible: fix the test instead.
EXCLUDE=(
	# Finds the runtime's sysmon thread as the one blocked in nanosleep,
	# by /proc/self/task/TID/syscall's syscall number compared with
	# unix.SYS_NANOSLEEP (101 on arm64). qemu-user does not translate that
	# file: it shows the host's syscall (x86_64 nanosleep, 35), and qemu's
	# own threads besides, so sysmon is never found under qemu-user. On
	# arm64 hardware the kernel reports 101. (It also re-executes its own
	# test binary, which without binfmt_misc cannot exec.)
	"internal/perf/rtloop TestIdleSysmon  # sysmon found by /proc syscall number: qemu-user shows the host's"
)

START=$(date +%s)
msg() { echo "test-arm64: $*"; }
sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_packages() {
	local p missing=()
	for p in $PACKAGES; do
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null || { msg "missing ${missing[*]} and no apt-get to install them"; return 1; }
	msg "installing ${missing[*]}"
	sudo_if_needed apt-get update -qq || { msg "apt-get update failed"; return 1; }
	sudo_if_needed env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "${missing[@]}" || { msg "apt-get install failed"; return 1; }
}

ensure_packages || exit 1
[ -x "$QEMU" ] || { msg "$QEMU not found"; exit 1; }
command -v "$CROSS_CC" >/dev/null || { msg "$CROSS_CC not found"; exit 1; }
"$QEMU" --version | head -1

vet_failed=0
msg "GOARCH=arm64 go vet ./..."
CGO_ENABLED=0 GOARCH=arm64 "$GO" vet ./... || vet_failed=1
msg "GOARCH=arm64 go vet -tags vmtest ./..."
CGO_ENABLED=0 GOARCH=arm64 "$GO" vet -tags vmtest ./... || vet_failed=1
[ "$vet_failed" = 0 ] && msg "vet ok" || msg "vet FAILED"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# skip_for PKG: the -test.skip regexp of EXCLUDE's entries for PKG.
skip_for() {
	local e pkg re out=()
	for e in "${EXCLUDE[@]}"; do
		e=${e%%#*}
		read -r pkg re <<<"$e"
		[[ $1 == *"$pkg" ]] && out+=("$re")
	done
	local IFS='|'
	echo "${out[*]}"
}

# Packages with tests, for arm64's build constraints.
mapfile -t pkgs < <(CGO_ENABLED=0 GOARCH=arm64 "$GO" list \
	-f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${@:-./...}")
[ ${#pkgs[@]} -gt 0 ] || { msg "no packages with tests"; exit 1; }

if [ "$prepare" = 1 ]; then
	GOARCH=arm64 GO="$GO" scripts/compile-tests.sh "$@" || vet_failed=1
	[ "$vet_failed" = 0 ] || { msg "prepare: vet or a build FAILED"; exit 1; }
	msg "prepared: packages installed, vet ok, test binaries compiled"
	exit 0
fi

# run_pkg PKG DIR: builds PKG's arm64 test binary and runs it under qemu;
# its output goes to $work/<name>.log and its summary row to <name>.row.
run_pkg() {
	local pkg=$1 dir=$2 name bin log t skip excl=0 rc pass fail skp status
	name=$(echo "$pkg" | tr / _)
	bin=$work/$name.test log=$work/$name.log
	t=$(date +%s)
	if ! CGO_ENABLED=0 GOARCH=arm64 "$GO" test -c -o "$bin" "$pkg" >"$log" 2>&1; then
		printf 'FAIL  %-50s build failed\n' "$pkg" >"$work/$name.row"
		return
	fi
	skip=$(skip_for "$pkg")
	if [ -n "$skip" ]; then
		excl=$(cd "$dir" && "$QEMU" "$bin" -test.list '.*' | grep -cE "^($skip)\$")
		[ "$excl" -gt 0 ] || msg "warning: EXCLUDE for $pkg ($skip) matches no test" >>"$log"
	fi
	(cd "$dir" && RDMACTL_TEST_EXEC=$QEMU CC="$CROSS_CC -static" \
		"$QEMU" "$bin" -test.v -test.timeout=10m ${skip:+-test.skip "^($skip)\$"}) >>"$log" 2>&1
	rc=$?
	t=$(($(date +%s) - t))
	# Top-level tests only (subtests are indented).
	pass=$(grep -c '^--- PASS: ' "$log")
	fail=$(grep -c '^--- FAIL: ' "$log")
	skp=$(grep -c '^--- SKIP: ' "$log")
	status=ok
	[ "$rc" = 0 ] && [ "$fail" = 0 ] || status=FAIL
	printf '%-5s %-50s %4d passed %3d failed %3d skipped %3d excluded %4ds\n' \
		"$status" "$pkg" "$pass" "$fail" "$skp" "$excl" "$t" >"$work/$name.row"
	echo "$excl" >"$work/$name.excl"
}

# Two packages at a time (as go test's -p on a 2-CPU host): one
# package's binary is built while another runs, and a package that
# mostly waits (internal/mesh's rendezvous deadlines) does not hold the
# other CPU idle. The longest ones start first. Each package's log is
# printed whole when it ends, and the rows in import-path order.
JOBS=${ARM64_JOBS:-$(nproc)}
first="internal/mesh cmd/rdmactl internal/perf internal/exporter/web"
ordered=()
for f in $first; do
	for line in "${pkgs[@]}"; do [[ ${line%% *} == */$f ]] && ordered+=("$line"); done
done
for line in "${pkgs[@]}"; do
	skipit=0
	for f in $first; do [[ ${line%% *} == */$f ]] && skipit=1; done
	[ "$skipit" = 1 ] || ordered+=("$line")
done
running=0
for line in "${ordered[@]}"; do
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
	read -r pkg dir <<<"$line"
	msg "start $pkg"
	(
		run_pkg "$pkg" "$dir"
		n=$(echo "$pkg" | tr / _)
		flock "$work/.out" sh -c 'echo; echo "test-arm64: ===== $1"; cat "$2"' sh "$pkg" "$work/$n.log"
	) &
	running=$((running + 1))
done
wait

rows=()
ran=0 pkg_failed=0 tot_pass=0 tot_fail=0 tot_skip=0 tot_excl=0
skipped=()
for line in "${pkgs[@]}"; do
	read -r pkg dir <<<"$line"
	n=$(echo "$pkg" | tr / _)
	row=$(cat "$work/$n.row" 2>/dev/null) || row=$(printf 'FAIL  %-50s did not run' "$pkg")
	rows+=("$row")
	case $row in
	*"build failed"* | *"did not run"*)
		pkg_failed=$((pkg_failed + 1))
		continue
		;;
	FAIL*) pkg_failed=$((pkg_failed + 1)) ;;
	esac
	ran=$((ran + 1))
	log=$work/$n.log
	tot_pass=$((tot_pass + $(grep -c '^--- PASS: ' "$log")))
	tot_fail=$((tot_fail + $(grep -c '^--- FAIL: ' "$log")))
	tot_skip=$((tot_skip + $(grep -c '^--- SKIP: ' "$log")))
	tot_excl=$((tot_excl + $(cat "$work/$n.excl")))
	while read -r s; do skipped+=("$pkg ${s#--- SKIP: }"); done < <(grep '^--- SKIP: ' "$log")
done

total=$(($(date +%s) - START))
echo
echo "===== arm64 summary (qemu-user, $(nproc) CPUs)"
printf '%s\n' "${rows[@]}"
if [ ${#skipped[@]} -gt 0 ]; then
	echo "skipped (by the tests themselves):"
	printf '    %s\n' "${skipped[@]}"
fi
if [ ${#EXCLUDE[@]} -gt 0 ]; then
	echo "excluded (EXCLUDE in $0):"
	printf '    %s\n' "${EXCLUDE[@]}"
fi
printf 'packages: %d run, %d failed; tests: %d passed, %d failed, %d skipped, %d excluded; vet: %s; %dm%02ds\n' \
	"$ran" "$pkg_failed" "$tot_pass" "$tot_fail" "$tot_skip" "$tot_excl" \
	"$([ "$vet_failed" = 0 ] && echo ok || echo FAILED)" $((total / 60)) $((total % 60))
if [ "$ran" = 0 ] || [ "$pkg_failed" -gt 0 ] || [ "$vet_failed" != 0 ]; then
	echo "arm64 FAILED"
	exit 1
fi
echo "arm64 PASSED"
