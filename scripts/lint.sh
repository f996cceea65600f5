#!/bin/bash
# scripts/lint.sh: gofmt, go vet (with and without the vmtest and tour tags)
# and staticcheck. Runs every check even when one fails, so that one CI run
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
echo "lint: go vet -tags vmtest,tour ./..."
"$GO" vet -tags vmtest,tour ./... || failed+=("go vet -tags vmtest,tour")
echo "lint: staticcheck -tags vmtest,tour ./... ($STATICCHECK)"
"$GO" run "$STATICCHECK" -tags vmtest,tour ./... || failed+=(staticcheck)

if [ ${#failed[@]} -gt 0 ]; then
	echo "lint: FAILED: ${failed[*]}"
	exit 1
fi
echo "lint: ok"
