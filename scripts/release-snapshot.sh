#!/bin/bash
# scripts/release-snapshot.sh: release archives for this checkout in dist/,
# as goreleaser.yaml describes them (make release-snapshot).
#
# With goreleaser on PATH (or GORELEASER=path) it runs
# `goreleaser release --snapshot --clean` (v2.14.0 checked: `go install
# github.com/goreleaser/goreleaser/v2@v2.14.0`; newer ones need Go 1.27 or a
# dependency the module proxy refuses here). It needs a git remote. Otherwise it builds the same
# artifacts itself with go build, tar and sha256sum:
#   dist/rdmactl_<version>_linux_{amd64,arm64}.tar.gz
#     rdmactl, README.md, LICENSE, completions/*, man/*.1
#   dist/checksums.txt
# Both are reproducible: file times are the commit's time.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
GO=${GO:-go}
GORELEASER=${GORELEASER:-$(command -v goreleaser || true)}

if [ -n "$GORELEASER" ]; then
	exec "$GORELEASER" release --snapshot --clean
fi

commit=$(git rev-parse HEAD)
short=$(git rev-parse --short HEAD)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
# goreleaser's snapshot version: the last tag with the patch level raised.
tag=$(git describe --tags --abbrev=0 2>/dev/null || echo v0.0.0)
IFS=. read -r major minor patch <<<"${tag#v}"
patch=${patch%%[-+]*}
version="$major.$minor.$((patch + 1))-SNAPSHOT-$short"
# The last flag: the heap without transparent huge pages (the Makefile's
# RUNTIME_LDFLAGS says why).
ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date -X runtime.godebugDefault=disablethp=1"

rm -rf dist
mkdir -p dist
for arch in amd64 arm64; do
	name=rdmactl_${version}_linux_$arch
	stage=dist/$name
	mkdir -p "$stage"
	echo "release-snapshot: building $name"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$stage/rdmactl" ./cmd/rdmactl
	cp README.md LICENSE "$stage/"
	mkdir -p "$stage/completions" "$stage/man"
	cp completions/* "$stage/completions/"
	cp man/*.1 "$stage/man/"
	# Files at the archive's top level, as goreleaser does by default.
	(cd "$stage" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) |
		tar -C "$stage" --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --mode=go-w \
			--no-recursion -cf - -T - | gzip -9n >"dist/$name.tar.gz"
	rm -rf "$stage"
done
(cd dist && sha256sum ./*.tar.gz | sed 's| \./| |' >checksums.txt)
echo "release-snapshot: dist/ (version $version)"
ls -l dist
