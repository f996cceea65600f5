#!/bin/bash
# scripts/lint.sh: gofmt, go vet (with and without the vmtest, tour and
# package tags) and staticcheck, of rdmactl's module and of tools/ (its
# own module: ./... from the top does not reach it). Runs every check even when one fails, so that one CI run
# shows all the problems; fails at the end if any check failed.
set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
GO=${GO:-go}
STATICCHECK=${STATICCHECK:?set STATICCHECK=honnef.co/go/tools/cmd/staticcheck@VERSION}
failed=()

echo "lint: gofmt -l"
out=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go' 2>/dev/null || find . -name '*.go' -not -path './out/*'))
if [ -n "$out" ]; then
	echo "gofmt: these files need formatting (gofmt -w FILE):"
	echo "$out" | sed 's/^/    /'
	failed+=(gofmt)
fi
echo "lint: go vet ./..."
"$GO" vet ./... || failed+=("go vet")
echo "lint: go vet -tags vmtest,tour,package ./..."
"$GO" vet -tags vmtest,tour,package ./... || failed+=("go vet -tags vmtest,tour,package")
echo "lint: go -C tools vet ./..."
"$GO" -C tools vet ./... || failed+=("go vet (tools)")
echo "lint: staticcheck -tags vmtest,tour,package ./... ($STATICCHECK), and tools/"
"$GO" run "$STATICCHECK" -tags vmtest,tour,package ./... || failed+=(staticcheck)
"$GO" -C tools run "$STATICCHECK" ./... || failed+=("staticcheck (tools)")

if [ ${#failed[@]} -gt 0 ]; then
	echo "lint: FAILED: ${failed[*]}"
	exit 1
fi
echo "lint: ok"
