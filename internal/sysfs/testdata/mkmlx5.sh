#!/bin/bash
# mkmlx5.sh OUTDIR: write a hand-made sysfs tree shaped like a ConnectX-5
# (mlx5) host, for offline tests: there is no mlx5 hardware here, so the
# layout follows the kernel sources (drivers/infiniband/core/sysfs.c for the
# device/port attributes, gid_attrs and counters/ (PMA), hw/mlx5/main.c for
# hca_type/board_id/fw_ver/hw_rev and mr_cache, hw/mlx5/counters.c for the
# hw_counters names). Values are invented but of the real form.
#
#   mlx5_0: one RoCE port (link_layer Ethernet) on netdev ens1f0 with
#           192.168.1.10 and 2001:db8::10, so the GID table has RoCE v1 and v2
#           twins for fe80::, IPv4 and IPv6; slots 6..15 are empty (types and
#           ndevs of empty slots are absent, as their read fails with EINVAL).
#   mlx5_1: one InfiniBand port (LID 0xd, SM LID 0x1), GID 0 only, type
#           "IB/RoCE v1" (= IB here), no ndevs entry (the kernel fails the read
#           when a GID has no netdev).
set -eu
out=${1:?usage: mkmlx5.sh OUTDIR}
rm -rf "$out"
w() { mkdir -p "$(dirname "$out/$1")"; printf '%s\n' "$2" >"$out/$1"; }

pci0=devices/pci0000:00/0000:00:02.0/0000:03:00.0
pci1=devices/pci0000:00/0000:00:02.0/0000:03:00.1
drv=bus/pci/drivers/mlx5_core
mkdir -p "$out/$drv"
for p in "$pci0" "$pci1"; do
	w "$p/numa_node" 0
	w "$p/vendor" 0x15b3
	w "$p/device" 0x1017
	w "$p/current_link_speed" "8.0 GT/s PCIe"
	w "$p/current_link_width" 16
	ln -s ../../../../bus/pci/drivers/mlx5_core "$out/$p/driver"
done

dev() { # name pci guid port-kind
	local d=class/infiniband/$1
	w "$d/board_id" MT_0000000010
	w "$d/fw_ver" 16.35.2000
	w "$d/hca_type" MT4119
	w "$d/hw_rev" 0x0
	w "$d/node_desc" "host1 $1"
	w "$d/node_guid" "$3"
	w "$d/node_type" "1: CA"
	w "$d/sys_image_guid" "$3"
	ln -s "../../../$2" "$out/$d/device"
	# mr_cache/<order>/{size,limit,cur,miss} plus rel_imm, rel_timeout.
	for o in 2 3 4; do
		w "$d/mr_cache/$o/size" $((o * 8))
		w "$d/mr_cache/$o/limit" $((o * 4))
		w "$d/mr_cache/$o/cur" $((o * 8))
		w "$d/mr_cache/$o/miss" 0
	done
	w "$d/mr_cache/rel_imm" 0
	w "$d/mr_cache/rel_timeout" 300
	local p=$d/ports/1
	w "$p/state" "4: ACTIVE"
	w "$p/phys_state" "5: LinkUp"
	w "$p/rate" "100 Gb/sec (4X EDR)"
	w "$p/sm_sl" 0
	w "$p/pkeys/0" 0xffff
	for i in $(seq 1 15); do w "$p/pkeys/$i" 0x0000; done
	# PMA counters (core/sysfs.c pma_counter attributes).
	w "$p/counters/VL15_dropped" 0
	w "$p/counters/excessive_buffer_overrun_errors" 0
	w "$p/counters/link_downed" 1
	w "$p/counters/link_error_recovery" 0
	w "$p/counters/local_link_integrity_errors" 0
	w "$p/counters/multicast_rcv_packets" 1234
	w "$p/counters/multicast_xmit_packets" 567
	w "$p/counters/port_rcv_constraint_errors" 0
	w "$p/counters/port_rcv_data" 2500000000
	w "$p/counters/port_rcv_errors" 0
	w "$p/counters/port_rcv_packets" 4000000
	w "$p/counters/port_rcv_remote_physical_errors" 0
	w "$p/counters/port_rcv_switch_relay_errors" 0
	w "$p/counters/port_xmit_constraint_errors" 0
	w "$p/counters/port_xmit_data" 5000000000
	w "$p/counters/port_xmit_discards" 3
	w "$p/counters/port_xmit_packets" 8000000
	w "$p/counters/port_xmit_wait" 42
	w "$p/counters/symbol_error" 0
	w "$p/counters/unicast_rcv_packets" 3998766
	w "$p/counters/unicast_xmit_packets" 7999433
	# hw_counters (mlx5 counters.c: basic, out_of_seq, retrans, extended
	# errors, roce accel, congestion, ext_ppcnt) and lifespan.
	local n=0
	for c in rx_write_requests rx_read_requests rx_atomic_requests rx_dct_connect out_of_buffer \
		out_of_sequence duplicate_request rnr_nak_retry_err packet_seq_err implied_nak_seq_err \
		local_ack_timeout_err resp_local_length_error resp_cqe_error req_cqe_error \
		req_remote_invalid_request req_remote_access_errors resp_remote_access_errors \
		resp_cqe_flush_error req_cqe_flush_error roce_adp_retrans roce_adp_retrans_to \
		roce_slow_restart roce_slow_restart_cnps roce_slow_restart_trans rp_cnp_ignored \
		rp_cnp_handled np_ecn_marked_roce_packets np_cnp_sent rx_icrc_encapsulated; do
		n=$((n + 1))
		case $c in
		rx_write_requests) v=1000 ;; rx_read_requests) v=500 ;; out_of_buffer) v=17 ;;
		np_cnp_sent) v=9 ;; rp_cnp_handled) v=11 ;; np_ecn_marked_roce_packets) v=9 ;;
		*) v=0 ;;
		esac
		w "$p/hw_counters/$c" $v
	done
	w "$p/hw_counters/lifespan" 10
}

dev mlx5_0 "$pci0" 9803:9b03:0067:a3b0
p=class/infiniband/mlx5_0/ports/1
w "$p/link_layer" Ethernet
w "$p/lid" 0x0
w "$p/sm_lid" 0x0
w "$p/lid_mask_count" 0
w "$p/cap_mask" 0x00010000
gid() { w "$p/gids/$1" "$2"; [ -z "$3" ] || { w "$p/gid_attrs/types/$1" "$3"; w "$p/gid_attrs/ndevs/$1" ens1f0; }; }
gid 0 fe80:0000:0000:0000:9a03:9bff:fe67:a3b0 "IB/RoCE v1"
gid 1 fe80:0000:0000:0000:9a03:9bff:fe67:a3b0 "RoCE v2"
gid 2 0000:0000:0000:0000:0000:ffff:c0a8:010a "IB/RoCE v1"
gid 3 0000:0000:0000:0000:0000:ffff:c0a8:010a "RoCE v2"
gid 4 2001:0db8:0000:0000:0000:0000:0000:0010 "IB/RoCE v1"
gid 5 2001:0db8:0000:0000:0000:0000:0000:0010 "RoCE v2"
for i in $(seq 6 15); do gid "$i" 0000:0000:0000:0000:0000:0000:0000:0000 ""; done
mkdir -p "$out/$p/gid_attrs/types" "$out/$p/gid_attrs/ndevs"

dev mlx5_1 "$pci1" 9803:9b03:0067:a3b1
p=class/infiniband/mlx5_1/ports/1
w "$p/link_layer" InfiniBand
w "$p/lid" 0xd
w "$p/sm_lid" 0x1
w "$p/lid_mask_count" 0
w "$p/cap_mask" 0x2659e848
w "$p/gids/0" fe80:0000:0000:0000:9803:9b03:0067:a3b1
w "$p/gid_attrs/types/0" "IB/RoCE v1"
for i in $(seq 1 15); do w "$p/gids/$i" 0000:0000:0000:0000:0000:0000:0000:0000; done
mkdir -p "$out/$p/gid_attrs/ndevs"

w class/infiniband_verbs/abi_version 6
w class/infiniband_verbs/uverbs0/ibdev mlx5_0
w class/infiniband_verbs/uverbs0/dev 231:192
w class/infiniband_verbs/uverbs0/abi_version 1
w class/infiniband_verbs/uverbs1/ibdev mlx5_1
w class/infiniband_verbs/uverbs1/dev 231:193
w class/infiniband_verbs/uverbs1/abi_version 1
w class/net/ens1f0/mtu 9000
w class/net/ens1f0/ifindex 2
w class/net/ens1f0/address 98:03:9b:67:a3:b0
w class/net/ens1f0/operstate up
