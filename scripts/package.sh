#!/bin/bash
# scripts/package.sh: make package. Writes to dist/ the .deb and .rpm of
# rdmactl for amd64 and arm64, its container image (both architectures in
# one OCI archive, tools/mkimage, named IMAGE:VERSION), deploy/kubernetes's
# manifests with their image pinned to that name, and SHA256SUMS over what
# it wrote.
#
#   1. builds the static binary for each architecture as the release does
#      (CGO_ENABLED=0, -trimpath, the version stamps of the Makefile);
#   2. stages what the packages hold (packaging/nfpm.yaml lists it): the
#      man pages gzipped, the completions, the exporter's systemd unit for
#      /usr/bin (from deploy/systemd, whose copy is for /usr/local/bin) with
#      its arguments in a configuration file, Debian's copyright and
#      changelog, the lintian overrides;
#   3. runs nfpm (pinned in tools/go.mod, built with go: no daemon, no
#      network beyond the Go module proxy) for deb and rpm;
#   4. writes the image and the manifests that run it. The release pushes
#      the image under that name (scripts/push-image.sh, goreleaser.yaml's
#      publisher) and publishes the manifests next to the packages.
#
# Reproducible: every time is the commit's (SOURCE_DATE_EPOCH), so two
# clean clones of one commit give byte-identical packages.
#
# Usage: scripts/package.sh   (needs Go and git; nothing else)
#   RDMACTL_DIST=DIR              write there instead of dist/ (relative:
#                                 to the checkout's top)
#   RDMACTL_PACKAGE_ARCHES="amd64" RDMACTL_PACKAGERS="deb"   fewer packages
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
GO=${GO:-go}
ROOT=$PWD
msg() { echo "package: $*" >&2; }

epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
export SOURCE_DATE_EPOCH=$epoch
commit=$(git rev-parse HEAD)
short=$(git rev-parse --short=12 HEAD)
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
date=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
# The packages' version: a release tag's (v1.2.3 -> 1.2.3), else one that
# sorts by the commit's time, below any release: 0.0.0~git<time>.<sha>.
if tag=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null); then
	pkgver=${tag#v}
else
	pkgver=0.0.0~git$(date -u -d "@$epoch" +%Y%m%d%H%M%S).$short
fi

# The image's repository: the name the release pushes it under, with the
# version as its tag (and latest for a release; scripts/push-image.sh).
# deploy/kubernetes's manifests name IMAGE:latest (TestImageName).
IMAGE=ghcr.io/rdmactl/rdmactl

# Absolute: nfpm runs in the staging directory. A relative RDMACTL_DIST is
# the checkout's (goreleaser.yaml's dist-packages).
dist=$(realpath -m "${RDMACTL_DIST:-$ROOT/dist}")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$dist"
rm -f "$dist"/rdmactl_*.deb "$dist"/rdmactl-*.rpm "$dist"/rdmactl_*_oci.tar "$dist"/rdmactl-*.yaml "$dist"/SHA256SUMS

# ---- what every package holds ------------------------------------------------
mkdir -p "$stage/man" "$stage/completions"
for m in man/*.1; do
	gzip -n -9 <"$m" >"$stage/man/$(basename "$m").gz"
done
cp completions/rdmactl.bash completions/rdmactl.zsh completions/rdmactl.fish "$stage/completions/"
cp LICENSE "$stage/LICENSE"
# The unit of deploy/systemd, for the packaged binary, its arguments in
# the configuration file (Debian's /etc/default, Fedora's /etc/sysconfig).
sed -e 's|^# Install: .*|# Installed by the rdmactl package: systemctl enable --now rdmactl-exporter|' \
	-e '/^#          systemctl daemon-reload/d' \
	-e 's|^ExecStart=/usr/local/bin/rdmactl exporter .*|EnvironmentFile=-/etc/default/rdmactl-exporter\nEnvironmentFile=-/etc/sysconfig/rdmactl-exporter\nExecStart=/usr/bin/rdmactl exporter $RDMACTL_EXPORTER_ARGS|' \
	deploy/systemd/rdmactl-exporter.service >"$stage/rdmactl-exporter.service"
grep -q '^ExecStart=/usr/bin/rdmactl exporter \$RDMACTL_EXPORTER_ARGS$' "$stage/rdmactl-exporter.service" ||
	{ msg "deploy/systemd/rdmactl-exporter.service: its ExecStart line changed; update scripts/package.sh"; exit 1; }
args=$(sed -n 's|^ExecStart=/usr/local/bin/rdmactl exporter ||p' deploy/systemd/rdmactl-exporter.service)
cat >"$stage/rdmactl-exporter.default" <<EOF
# Arguments of rdmactl exporter, as rdmactl-exporter.service starts it
# (rdmactl exporter --help; docs/exporter.md). For TLS, client
# certificates and basic auth, add --web.config.file=/etc/rdmactl/web-config.yml
RDMACTL_EXPORTER_ARGS="$args"
EOF
cat >"$stage/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rdmactl
Source: https://github.com/rdmactl/rdmactl

Files: *
Copyright: 2026 The rdmactl authors
License: Apache-2.0

License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 https://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
EOF
{
	printf 'rdmactl (%s) unstable; urgency=medium\n\n' "$pkgver"
	printf '  * Built from commit %s.\n' "$commit"
	printf '    https://github.com/rdmactl/rdmactl/commits/%s\n\n' "$commit"
	printf ' -- rdmactl maintainers <rdmactl@users.noreply.github.com>  %s\n' "$(date -u -R -d "@$epoch")"
} | gzip -n -9 >"$stage/changelog.gz"
# What lintian says of the package, each with its reason on the line
# above it, which lintian shows with the override (lintian's manual,
# 2.4.2 "Documenting overrides").
cat >"$stage/lintian-overrides" <<'EOF'
# Static by design (Go without cgo): runs on any Linux, no libibverbs, no libc version needed.
rdmactl: statically-linked-binary [usr/bin/rdmactl]
# The unit needs systemd (DynamicUser, sandboxing); under another init run 'rdmactl exporter' directly.
rdmactl: package-supports-alternative-init-but-no-init.d-script [lib/systemd/system/rdmactl-exporter.service]
EOF

msg "building nfpm and mkimage (tools/go.mod)"
"$GO" -C tools build -o "$stage/.nfpm" github.com/goreleaser/nfpm/v2/cmd/nfpm
"$GO" -C tools build -o "$stage/.mkimage" ./mkimage
imageargs=()

# ---- per architecture --------------------------------------------------------
for arch in ${RDMACTL_PACKAGE_ARCHES:-amd64 arm64}; do
	msg "building linux/$arch"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch "$GO" build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date -X runtime.godebugDefault=disablethp=1" \
		-o "$stage/rdmactl" ./cmd/rdmactl
	find "$stage" -exec touch -h -d "@$epoch" {} +
	cp "$stage/rdmactl" "$stage/.rdmactl-$arch"
	imageargs+=(-bin "$arch=$stage/.rdmactl-$arch")
	for pkg in ${RDMACTL_PACKAGERS:-deb rpm}; do
		msg "nfpm: $pkg for $arch"
		(cd "$stage" && PKG_ARCH=$arch PKG_VERSION=$pkgver \
			./.nfpm package --config "$ROOT/packaging/nfpm.yaml" --packager "$pkg" --target "$dist/" >&2)
	done
done

# The container image: every architecture in one index, an OCI archive;
# and the manifests that run it, by that name (the release's copies, which
# an admin applies: deploy/kubernetes's name :latest).
image=rdmactl_${version}_oci.tar
if [ -z "${RDMACTL_PACKAGERS:-}" ]; then
	msg "image: $image ($IMAGE:$version)"
	"$stage/.mkimage" -out "$dist/$image" -name "$IMAGE" -version "$version" -revision "$commit" "${imageargs[@]}"
	for m in deploy/kubernetes/*.yaml; do
		out=$dist/rdmactl-$(basename "$m" | sed 's/^rdmactl-//')
		sed "s|^\( *image: \)$IMAGE:latest\$|\1$IMAGE:$version|" "$m" >"$out"
		if [ "$(grep -c '^ *image: ' "$out")" != "$(grep -c "^ *image: $IMAGE:$version\$" "$out")" ]; then
			msg "$m: an image other than $IMAGE:latest; the release would not run its own image"
			exit 1
		fi
	done
fi
(cd "$dist" && sha256sum $(ls rdmactl_*.deb rdmactl-*.rpm rdmactl_*_oci.tar rdmactl-*.yaml 2>/dev/null) >SHA256SUMS)
msg "wrote:"
sed 's/^/  /' "$dist/SHA256SUMS" >&2
