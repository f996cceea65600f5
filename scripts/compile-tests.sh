#!/bin/bash
# scripts/compile-tests.sh: compiles every package's test binary without
# running it (go test -c -o /dev/null), for the architecture in GOARCH
# (default the host's), so that a later go test only links and runs them:
# the Go build cache keeps the compiled packages. CI runs it for amd64 and,
# through scripts/test-arm64.sh --prepare, for arm64 while the VM tests run.
#
# Usage: [GOARCH=arm64] scripts/compile-tests.sh [PKG...]   (default ./...)
# Fails if any package fails to compile or none has tests.
set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
GO=${GO:-go}
export CGO_ENABLED=0
# Packages with tests, for the target's build constraints.
mapfile -t pkgs < <("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${@:-./...}")
[ ${#pkgs[@]} -gt 0 ] || { echo "compile-tests: no packages with tests" >&2; exit 1; }
failed=0
for pkg in "${pkgs[@]}"; do
	"$GO" test -c -o /dev/null "$pkg" || failed=1
done
[ "$failed" = 0 ] || { echo "compile-tests: a test binary failed to compile (GOARCH=$("$GO" env GOARCH))" >&2; exit 1; }
echo "compile-tests: ${#pkgs[@]} test binaries compiled (GOARCH=$("$GO" env GOARCH))"
