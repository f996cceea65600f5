#!/bin/bash
# capture.sh OUTDIR: copy what package sysfs reads from a live /sys into
# OUTDIR, laid out like /sys (OUTDIR/class/infiniband/<dev>/...), so tests can
# read it with sysfs.New(OUTDIR). Run it where the RDMA devices are, e.g.
#
#   /work/shared/rdmavm/run -- bash internal/sysfs/testdata/capture.sh internal/sysfs/testdata/rxe
#
# What is copied and why:
#   - class/infiniband/<dev>/** as regular files and directories (the class
#     entry itself is a symlink into /sys/devices; we store a real directory).
#     power/ and subsystem/ are skipped (subsystem loops back to the class).
#   - ports/<p>/gids, gid_attrs/{types,ndevs}: only indices below GID_KEEP
#     (default 16). A port has gid_tbl_len (1024 on rxe) slots, almost all
#     empty; 16 keep a few empty ones for the tests without 6000 files.
#   - files whose read() fails (gid_attrs/types/N of an empty slot fails with
#     EINVAL, write-only attributes) are not created; their paths and the
#     error are listed in OUTDIR/UNREADABLE so the fixture says what was lost.
#   - symlinks inside the device directory (device, device/driver) are kept as
#     relative symlinks into OUTDIR/devices/..., and the PCI device's numa_node
#     is copied, so PCIAddr/Driver/NUMANode can be read offline.
#   - class/infiniband_verbs/{abi_version,uverbsN/{ibdev,dev,abi_version}}.
#   - class/net/<nd>/{mtu,address,ifindex,operstate} for every netdev that
#     appears in a gid_attrs/ndevs entry or a device's parent file.
set -u
out=${1:?usage: capture.sh OUTDIR}
keep=${GID_KEEP:-16}
sys=${SYSFS:-/sys}
rm -rf "$out"
mkdir -p "$out"
unread="$out/UNREADABLE"
: >"$unread"
netdevs=()

copyfile() { # src dst
	local err
	if err=$(cat "$1" 2>&1 >"$2.tmp"); then
		mv "$2.tmp" "$2"
	else
		rm -f "$2.tmp"
		echo "${2#"$out"/}	${err##*: }" >>"$unread"
	fi
}

for d in "$sys"/class/infiniband/*; do
	[ -e "$d" ] || continue
	dev=${d##*/}
	dst="$out/class/infiniband/$dev"
	mkdir -p "$dst"
	(cd "$d" && find . -mindepth 1 \( -name power -o -name subsystem \) -prune -o -print) | sort | while read -r rel; do
		rel=${rel#./}
		src="$d/$rel"
		case "$rel" in
		ports/*/gids/* | ports/*/gid_attrs/*/*)
			idx=${rel##*/}
			[ "$idx" -lt "$keep" ] 2>/dev/null || continue ;;
		esac
		if [ -L "$src" ]; then
			continue # handled below (device) or irrelevant
		elif [ -d "$src" ]; then
			mkdir -p "$dst/$rel"
		elif [ -f "$src" ]; then
			copyfile "$src" "$dst/$rel"
		fi
	done
	if [ -L "$d/device" ]; then
		real=$(readlink -f "$d/device")
		rrel=${real#"$sys"/}
		mkdir -p "$out/$rrel"
		ln -s "../../../$rrel" "$dst/device"
		for f in numa_node vendor device current_link_speed current_link_width; do
			[ -f "$real/$f" ] && copyfile "$real/$f" "$out/$rrel/$f"
		done
		if [ -L "$real/driver" ]; then
			drv=$(readlink -f "$real/driver")
			drel=${drv#"$sys"/}
			mkdir -p "$out/$drel"
			up=$(echo "$rrel" | sed 's|[^/]*|..|g')
			ln -s "$up/$drel" "$out/$rrel/driver"
		fi
	fi
done

for f in "$out"/class/infiniband/*/ports/*/gid_attrs/ndevs/* "$out"/class/infiniband/*/parent; do
	[ -f "$f" ] && netdevs+=("$(cat "$f")")
done

if [ -d "$sys/class/infiniband_verbs" ]; then
	mkdir -p "$out/class/infiniband_verbs"
	copyfile "$sys/class/infiniband_verbs/abi_version" "$out/class/infiniband_verbs/abi_version"
	for u in "$sys"/class/infiniband_verbs/uverbs*; do
		[ -e "$u" ] || continue
		n=${u##*/}
		mkdir -p "$out/class/infiniband_verbs/$n"
		for f in ibdev dev abi_version; do
			copyfile "$u/$f" "$out/class/infiniband_verbs/$n/$f"
		done
	done
fi

for nd in $(printf '%s\n' "${netdevs[@]}" | sort -u); do
	[ -n "$nd" ] && [ -d "$sys/class/net/$nd" ] || continue
	mkdir -p "$out/class/net/$nd"
	for f in mtu address ifindex operstate; do
		copyfile "$sys/class/net/$nd/$f" "$out/class/net/$nd/$f"
	done
done
sort -o "$unread" "$unread"
echo "captured $(find "$out" -type f | wc -l) files into $out ($(wc -l <"$unread") unreadable)"
