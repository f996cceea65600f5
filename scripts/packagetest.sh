#!/bin/bash
# scripts/packagetest.sh: make packagetest (after make package), as root on
# a machine that may be changed (CI): installs what the checks use through
# apt (lintian, rpm, skopeo, umoci, man-db, bash-completion, systemd's
# systemd-analyze, qemu-user-static for the arm64 image), then runs
# scripts/package_test.go: the .deb installed, upgraded and purged, the
# .rpm against the .deb, the image unpacked and run, and a clean clone's
# packages byte-identical.
set -uo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
GO=${GO:-go}
PACKAGES="lintian rpm skopeo umoci man-db bash-completion systemd qemu-user-static"
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "packagetest: run as root (it installs and purges the package)" >&2; exit 1; }
	exec sudo env "PATH=$PATH" GO="$GO" "$0" "$@"
fi
missing=()
for p in $PACKAGES; do
	dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "packagetest: installing ${missing[*]}" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2 ||
		{ echo "packagetest: apt-get install failed" >&2; exit 1; }
fi
exec "$GO" test -tags package -count=1 -v -timeout 20m ./scripts -run '^Test(DebPackage|RPMMatchesDeb|Image|Reproducible)$'
