#!/bin/bash
# scripts/fuzz.sh [FUZZTIME]: runs every Fuzz target of the module for
# FUZZTIME (default 20s) each, one at a time (go test -fuzz takes one target
# per run). New crashers land in the package's testdata/fuzz/<Target>/ and
# then run as ordinary tests: commit them with the fix.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
FUZZTIME=${1:-20s}
GO=${GO:-go}

n=0
failed=()
# "<dir> <FuzzName>" for every func FuzzXxx(f *testing.F) in a _test.go file.
while read -r dir name; do
	n=$((n + 1))
	echo "fuzz: ./$dir $name ($FUZZTIME)"
	if ! "$GO" test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" "./$dir"; then
		failed+=("./$dir $name")
	fi
done < <(grep -rHoE --include='*_test.go' --exclude-dir=.git --exclude-dir=out '^func Fuzz[A-Za-z0-9_]*\(' . |
	sed -E 's|^\./(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]*)\($|\1 \2|' | LC_ALL=C sort -u)

echo "fuzz: $n target(s), ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
	printf '  FAIL %s\n' "${failed[@]}"
	exit 1
fi
