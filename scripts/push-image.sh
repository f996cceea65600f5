#!/bin/bash
# scripts/push-image.sh ARCHIVE: pushes the image of make package's OCI
# archive (dist/rdmactl_<version>_oci.tar) to its registry, under the name
# tools/mkimage recorded in it (io.containerd.image.name: IMAGE:<version>),
# both platforms of its index, digests unchanged. A release's version
# (vX.Y.Z, no pre-release suffix) is also pushed as IMAGE:latest, the tag
# deploy/kubernetes's manifests name.
#
# The release runs it (goreleaser.yaml's publisher) after `skopeo login
# ghcr.io`; by hand:
#
#   skopeo login ghcr.io && scripts/push-image.sh dist/rdmactl_v1.2.3_oci.tar
#
# SKOPEO=echo prints the copies instead (TestImageName).
set -euo pipefail
SKOPEO=${SKOPEO:-skopeo}
archive=${1:?usage: scripts/push-image.sh dist/rdmactl_VERSION_oci.tar}

# The annotations of index.json's one entry, as tools/mkimage writes
# them: its tag and its full name.
index=$(tar -xOf "$archive" index.json)
annotation() { grep -o "\"$1\": *\"[^\"]*\"" <<<"$index" | sed 's/.*: *"\(.*\)"/\1/'; }
tag=$(annotation org.opencontainers.image.ref.name)
name=$(annotation io.containerd.image.name)
if [ -z "$tag" ] || [ "$name" = "${name%:"$tag"}" ]; then
	echo "push-image: $archive: no tag, or a name ($name) that does not end in it" >&2
	exit 1
fi
repo=${name%:"$tag"}

tags=("$tag")
[[ $tag =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] && tags+=(latest)
for t in "${tags[@]}"; do
	"$SKOPEO" copy --all --preserve-digests "oci-archive:$archive:$tag" "docker://$repo:$t"
done
