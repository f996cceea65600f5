/* Prints sizeof and offsetof of the UAPI structs mirrored in abi.go, for
 * layout_test.go. Test-only: the product is cgo-free. One line each:
 *   <struct> size <n>
 *   <struct>.<field> <offset>
 */
#include <stddef.h>
#include <stdio.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>

#define S(T) printf("%s size %zu\n", #T, sizeof(struct T))
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(struct T, f))
#define FN(T, path, name) printf("%s.%s %zu\n", #T, name, offsetof(struct T, path))

int main(void)
{
	S(ib_uverbs_cmd_hdr); F(ib_uverbs_cmd_hdr, command); F(ib_uverbs_cmd_hdr, in_words); F(ib_uverbs_cmd_hdr, out_words);
	S(ib_uverbs_ex_cmd_hdr); F(ib_uverbs_ex_cmd_hdr, response); F(ib_uverbs_ex_cmd_hdr, provider_in_words);
	F(ib_uverbs_ex_cmd_hdr, provider_out_words); F(ib_uverbs_ex_cmd_hdr, cmd_hdr_reserved);

	S(ib_uverbs_ioctl_hdr); F(ib_uverbs_ioctl_hdr, length); F(ib_uverbs_ioctl_hdr, object_id);
	F(ib_uverbs_ioctl_hdr, method_id); F(ib_uverbs_ioctl_hdr, num_attrs); F(ib_uverbs_ioctl_hdr, reserved1);
	F(ib_uverbs_ioctl_hdr, driver_id); F(ib_uverbs_ioctl_hdr, reserved2);
	S(ib_uverbs_attr); F(ib_uverbs_attr, attr_id); F(ib_uverbs_attr, len); F(ib_uverbs_attr, flags);
	F(ib_uverbs_attr, attr_data); F(ib_uverbs_attr, data);

	S(ib_uverbs_get_context); F(ib_uverbs_get_context, response);
	S(ib_uverbs_get_context_resp); F(ib_uverbs_get_context_resp, async_fd); F(ib_uverbs_get_context_resp, num_comp_vectors);

	S(ib_uverbs_query_device); F(ib_uverbs_query_device, response);
	S(ib_uverbs_query_device_resp);
	F(ib_uverbs_query_device_resp, fw_ver); F(ib_uverbs_query_device_resp, node_guid);
	F(ib_uverbs_query_device_resp, sys_image_guid); F(ib_uverbs_query_device_resp, max_mr_size);
	F(ib_uverbs_query_device_resp, page_size_cap); F(ib_uverbs_query_device_resp, vendor_id);
	F(ib_uverbs_query_device_resp, vendor_part_id); F(ib_uverbs_query_device_resp, hw_ver);
	F(ib_uverbs_query_device_resp, max_qp); F(ib_uverbs_query_device_resp, max_qp_wr);
	F(ib_uverbs_query_device_resp, device_cap_flags); F(ib_uverbs_query_device_resp, max_sge);
	F(ib_uverbs_query_device_resp, max_sge_rd); F(ib_uverbs_query_device_resp, max_cq);
	F(ib_uverbs_query_device_resp, max_cqe); F(ib_uverbs_query_device_resp, max_mr);
	F(ib_uverbs_query_device_resp, max_pd); F(ib_uverbs_query_device_resp, max_qp_rd_atom);
	F(ib_uverbs_query_device_resp, max_ee_rd_atom); F(ib_uverbs_query_device_resp, max_res_rd_atom);
	F(ib_uverbs_query_device_resp, max_qp_init_rd_atom); F(ib_uverbs_query_device_resp, max_ee_init_rd_atom);
	F(ib_uverbs_query_device_resp, atomic_cap); F(ib_uverbs_query_device_resp, max_ee);
	F(ib_uverbs_query_device_resp, max_rdd); F(ib_uverbs_query_device_resp, max_mw);
	F(ib_uverbs_query_device_resp, max_raw_ipv6_qp); F(ib_uverbs_query_device_resp, max_raw_ethy_qp);
	F(ib_uverbs_query_device_resp, max_mcast_grp); F(ib_uverbs_query_device_resp, max_mcast_qp_attach);
	F(ib_uverbs_query_device_resp, max_total_mcast_qp_attach); F(ib_uverbs_query_device_resp, max_ah);
	F(ib_uverbs_query_device_resp, max_fmr); F(ib_uverbs_query_device_resp, max_map_per_fmr);
	F(ib_uverbs_query_device_resp, max_srq); F(ib_uverbs_query_device_resp, max_srq_wr);
	F(ib_uverbs_query_device_resp, max_srq_sge); F(ib_uverbs_query_device_resp, max_pkeys);
	F(ib_uverbs_query_device_resp, local_ca_ack_delay); F(ib_uverbs_query_device_resp, phys_port_cnt);
	F(ib_uverbs_query_device_resp, reserved);

	S(ib_uverbs_ex_query_device); F(ib_uverbs_ex_query_device, comp_mask); F(ib_uverbs_ex_query_device, reserved);
	S(ib_uverbs_odp_caps); F(ib_uverbs_odp_caps, general_caps);
	FN(ib_uverbs_odp_caps, per_transport_caps.rc_odp_caps, "rc_odp_caps");
	FN(ib_uverbs_odp_caps, per_transport_caps.uc_odp_caps, "uc_odp_caps");
	FN(ib_uverbs_odp_caps, per_transport_caps.ud_odp_caps, "ud_odp_caps");
	F(ib_uverbs_odp_caps, reserved);
	S(ib_uverbs_rss_caps); F(ib_uverbs_rss_caps, supported_qpts); F(ib_uverbs_rss_caps, max_rwq_indirection_tables);
	F(ib_uverbs_rss_caps, max_rwq_indirection_table_size); F(ib_uverbs_rss_caps, reserved);
	S(ib_uverbs_tm_caps); F(ib_uverbs_tm_caps, max_rndv_hdr_size); F(ib_uverbs_tm_caps, max_num_tags);
	F(ib_uverbs_tm_caps, flags); F(ib_uverbs_tm_caps, max_ops); F(ib_uverbs_tm_caps, max_sge); F(ib_uverbs_tm_caps, reserved);
	S(ib_uverbs_cq_moderation_caps); F(ib_uverbs_cq_moderation_caps, max_cq_moderation_count);
	F(ib_uverbs_cq_moderation_caps, max_cq_moderation_period); F(ib_uverbs_cq_moderation_caps, reserved);
	S(ib_uverbs_ex_query_device_resp); F(ib_uverbs_ex_query_device_resp, base);
	F(ib_uverbs_ex_query_device_resp, comp_mask); F(ib_uverbs_ex_query_device_resp, response_length);
	F(ib_uverbs_ex_query_device_resp, odp_caps); F(ib_uverbs_ex_query_device_resp, timestamp_mask);
	F(ib_uverbs_ex_query_device_resp, hca_core_clock); F(ib_uverbs_ex_query_device_resp, device_cap_flags_ex);
	F(ib_uverbs_ex_query_device_resp, rss_caps); F(ib_uverbs_ex_query_device_resp, max_wq_type_rq);
	F(ib_uverbs_ex_query_device_resp, raw_packet_caps); F(ib_uverbs_ex_query_device_resp, tm_caps);
	F(ib_uverbs_ex_query_device_resp, cq_moderation_caps); F(ib_uverbs_ex_query_device_resp, max_dm_size);
	F(ib_uverbs_ex_query_device_resp, xrc_odp_caps); F(ib_uverbs_ex_query_device_resp, reserved);

	S(ib_uverbs_query_port); F(ib_uverbs_query_port, response); F(ib_uverbs_query_port, port_num);
	F(ib_uverbs_query_port, reserved);
	S(ib_uverbs_query_port_resp); F(ib_uverbs_query_port_resp, port_cap_flags); F(ib_uverbs_query_port_resp, max_msg_sz);
	F(ib_uverbs_query_port_resp, bad_pkey_cntr); F(ib_uverbs_query_port_resp, qkey_viol_cntr);
	F(ib_uverbs_query_port_resp, gid_tbl_len); F(ib_uverbs_query_port_resp, pkey_tbl_len);
	F(ib_uverbs_query_port_resp, lid); F(ib_uverbs_query_port_resp, sm_lid); F(ib_uverbs_query_port_resp, state);
	F(ib_uverbs_query_port_resp, max_mtu); F(ib_uverbs_query_port_resp, active_mtu); F(ib_uverbs_query_port_resp, lmc);
	F(ib_uverbs_query_port_resp, max_vl_num); F(ib_uverbs_query_port_resp, sm_sl);
	F(ib_uverbs_query_port_resp, subnet_timeout); F(ib_uverbs_query_port_resp, init_type_reply);
	F(ib_uverbs_query_port_resp, active_width); F(ib_uverbs_query_port_resp, active_speed);
	F(ib_uverbs_query_port_resp, phys_state); F(ib_uverbs_query_port_resp, link_layer);
	F(ib_uverbs_query_port_resp, flags); F(ib_uverbs_query_port_resp, reserved);
	S(ib_uverbs_query_port_resp_ex); F(ib_uverbs_query_port_resp_ex, legacy_resp);
	F(ib_uverbs_query_port_resp_ex, port_cap_flags2); F(ib_uverbs_query_port_resp_ex, reserved);

	S(ib_uverbs_alloc_pd); F(ib_uverbs_alloc_pd, response);
	S(ib_uverbs_alloc_pd_resp); F(ib_uverbs_alloc_pd_resp, pd_handle);
	S(ib_uverbs_dealloc_pd); F(ib_uverbs_dealloc_pd, pd_handle);
	S(ib_uverbs_reg_mr); F(ib_uverbs_reg_mr, response); F(ib_uverbs_reg_mr, start); F(ib_uverbs_reg_mr, length);
	F(ib_uverbs_reg_mr, hca_va); F(ib_uverbs_reg_mr, pd_handle); F(ib_uverbs_reg_mr, access_flags);
	S(ib_uverbs_reg_mr_resp); F(ib_uverbs_reg_mr_resp, mr_handle); F(ib_uverbs_reg_mr_resp, lkey); F(ib_uverbs_reg_mr_resp, rkey);
	S(ib_uverbs_dereg_mr); F(ib_uverbs_dereg_mr, mr_handle);

	S(ib_uverbs_gid_entry); F(ib_uverbs_gid_entry, gid); F(ib_uverbs_gid_entry, gid_index);
	F(ib_uverbs_gid_entry, port_num); F(ib_uverbs_gid_entry, gid_type); F(ib_uverbs_gid_entry, netdev_ifindex);
	return 0;
}
