#!/bin/bash
# build-at.sh REV OUT: build rdmactl as it was at commit REV into OUT,
# with this checkout's Go and build flags (LDFLAGS, as make exports them:
# the same version stamps, so that only the code differs).
#
# vm/vmtest builds the commit named in cmd/rdmactl/testdata/outputs-base
# this way for TestVMOutputsUnchanged, which runs both binaries side by side.
set -euo pipefail
rev=${1:?usage: build-at.sh REV OUT} out=${2:?usage: build-at.sh REV OUT}
root=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
if ! git -C "$root" cat-file -e "$rev^{commit}" 2>/dev/null &&
	[ "$(git -C "$root" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
	# A shallow clone (CI's, say): fetch the history it lacks, once.
	echo "build-at.sh: $rev is not in this shallow clone: git fetch --unshallow" >&2
	git -C "$root" fetch --quiet --unshallow 2>&1 | sed 's/^/build-at.sh: /' >&2 || true
fi
if ! git -C "$root" cat-file -e "$rev^{commit}" 2>/dev/null; then
	echo "build-at.sh: commit $rev is not in this clone, and could not be fetched" >&2
	exit 1
fi
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git -C "$root" archive "$rev" | tar -x -C "$src"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
cd "$src"
CGO_ENABLED=0 "${GO:-go}" build -trimpath -ldflags "${LDFLAGS:--s -w}" -o "$out" ./cmd/rdmactl
