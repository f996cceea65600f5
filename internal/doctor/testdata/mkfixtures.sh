#!/bin/bash
# mkfixtures.sh: (re)write doctor's fixture trees from the hand-made mlx5
# tree (internal/sysfs/testdata/mlx5, made by mkmlx5.sh), each with one
# fault a check must find. Run from this directory.
#
#   pcie/:       mlx5_0's PCI function trained at 8.0 GT/s x8, capable of
#                16.0 GT/s x16 (current_link_* below max_link_*); mlx5_1 at
#                its maximum.
#   fwmismatch/: mlx5_1 (same hca_type MT4119 and board_id as mlx5_0) runs
#                firmware 16.31.1014, mlx5_0 16.35.2000.
#   ibnosm/:     mlx5_1's InfiniBand port has a physical link but no subnet
#                manager: state INIT, LID 0, SM LID 0.
#   roce_mtu/:   mlx5_0's netdev ens1f0 has MTU 1000 (< 1024 + 96).
set -eu
cd "$(dirname "$0")"
base=../../sysfs/testdata/mlx5
pci=devices/pci0000:00/0000:00:02.0
ib=class/infiniband
mk() { rm -rf "$1"; cp -a "$base" "$1"; }
w() { printf '%s\n' "$2" >"$1"; }
link() { # tree function cur-speed cur-width max-speed max-width
	w "$1/$pci/$2/current_link_speed" "$3"
	w "$1/$pci/$2/current_link_width" "$4"
	w "$1/$pci/$2/max_link_speed" "$5"
	w "$1/$pci/$2/max_link_width" "$6"
}

mk pcie
link pcie 0000:03:00.0 "8.0 GT/s PCIe" 8 "16.0 GT/s PCIe" 16
link pcie 0000:03:00.1 "16.0 GT/s PCIe" 16 "16.0 GT/s PCIe" 16

mk fwmismatch
w fwmismatch/$ib/mlx5_1/fw_ver 16.31.1014

mk ibnosm
w ibnosm/$ib/mlx5_1/ports/1/state "2: INIT"
w ibnosm/$ib/mlx5_1/ports/1/lid 0x0
w ibnosm/$ib/mlx5_1/ports/1/sm_lid 0x0

mk roce_mtu
w roce_mtu/class/net/ens1f0/mtu 1000
