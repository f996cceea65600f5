/* Prints "struct.field offset size" for the uverbs structs qp_abi.go
 * mirrors; qp_layout_test.go compiles it with gcc against /usr/include/rdma
 * and compares. */
#include <stdio.h>
#include <stddef.h>
#include <rdma/ib_user_verbs.h>

#define F(s, f) printf(#s "." #f " %zu %zu\n", offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define O(s, f) printf(#s "." #f " %zu 0\n", offsetof(struct s, f))
#define S(s) printf(#s " 0 %zu\n", sizeof(struct s))

int main(void)
{
	S(ib_uverbs_create_cq); F(ib_uverbs_create_cq, response); F(ib_uverbs_create_cq, user_handle);
	F(ib_uverbs_create_cq, cqe); F(ib_uverbs_create_cq, comp_vector); F(ib_uverbs_create_cq, comp_channel);
	F(ib_uverbs_create_cq, reserved);
	S(ib_uverbs_create_cq_resp); F(ib_uverbs_create_cq_resp, cq_handle); F(ib_uverbs_create_cq_resp, cqe);
	S(ib_uverbs_destroy_cq); F(ib_uverbs_destroy_cq, response); F(ib_uverbs_destroy_cq, cq_handle);
	S(ib_uverbs_destroy_cq_resp); F(ib_uverbs_destroy_cq_resp, comp_events_reported);
	F(ib_uverbs_destroy_cq_resp, async_events_reported);
	S(ib_uverbs_create_comp_channel); F(ib_uverbs_create_comp_channel, response);
	S(ib_uverbs_create_comp_channel_resp); F(ib_uverbs_create_comp_channel_resp, fd);
	S(ib_uverbs_req_notify_cq); F(ib_uverbs_req_notify_cq, cq_handle); F(ib_uverbs_req_notify_cq, solicited_only);
	S(ib_uverbs_comp_event_desc); F(ib_uverbs_comp_event_desc, cq_handle);

	S(ib_uverbs_create_qp); F(ib_uverbs_create_qp, response); F(ib_uverbs_create_qp, user_handle);
	F(ib_uverbs_create_qp, pd_handle); F(ib_uverbs_create_qp, send_cq_handle); F(ib_uverbs_create_qp, recv_cq_handle);
	F(ib_uverbs_create_qp, srq_handle); F(ib_uverbs_create_qp, max_send_wr); F(ib_uverbs_create_qp, max_recv_wr);
	F(ib_uverbs_create_qp, max_send_sge); F(ib_uverbs_create_qp, max_recv_sge); F(ib_uverbs_create_qp, max_inline_data);
	F(ib_uverbs_create_qp, sq_sig_all); F(ib_uverbs_create_qp, qp_type); F(ib_uverbs_create_qp, is_srq);
	F(ib_uverbs_create_qp, reserved);
	S(ib_uverbs_create_qp_resp); F(ib_uverbs_create_qp_resp, qp_handle); F(ib_uverbs_create_qp_resp, qpn);
	F(ib_uverbs_create_qp_resp, max_send_wr); F(ib_uverbs_create_qp_resp, max_recv_wr);
	F(ib_uverbs_create_qp_resp, max_send_sge); F(ib_uverbs_create_qp_resp, max_recv_sge);
	F(ib_uverbs_create_qp_resp, max_inline_data); F(ib_uverbs_create_qp_resp, reserved);
	S(ib_uverbs_destroy_qp); F(ib_uverbs_destroy_qp, response); F(ib_uverbs_destroy_qp, qp_handle);
	S(ib_uverbs_destroy_qp_resp); F(ib_uverbs_destroy_qp_resp, events_reported);

	S(ib_uverbs_qp_dest); F(ib_uverbs_qp_dest, dgid); F(ib_uverbs_qp_dest, flow_label); F(ib_uverbs_qp_dest, dlid);
	F(ib_uverbs_qp_dest, reserved); F(ib_uverbs_qp_dest, sgid_index); F(ib_uverbs_qp_dest, hop_limit);
	F(ib_uverbs_qp_dest, traffic_class); F(ib_uverbs_qp_dest, sl); F(ib_uverbs_qp_dest, src_path_bits);
	F(ib_uverbs_qp_dest, static_rate); F(ib_uverbs_qp_dest, is_global); F(ib_uverbs_qp_dest, port_num);

	S(ib_uverbs_modify_qp); F(ib_uverbs_modify_qp, dest); F(ib_uverbs_modify_qp, alt_dest);
	F(ib_uverbs_modify_qp, qp_handle); F(ib_uverbs_modify_qp, attr_mask); F(ib_uverbs_modify_qp, qkey);
	F(ib_uverbs_modify_qp, rq_psn); F(ib_uverbs_modify_qp, sq_psn); F(ib_uverbs_modify_qp, dest_qp_num);
	F(ib_uverbs_modify_qp, qp_access_flags); F(ib_uverbs_modify_qp, pkey_index); F(ib_uverbs_modify_qp, alt_pkey_index);
	F(ib_uverbs_modify_qp, qp_state); F(ib_uverbs_modify_qp, cur_qp_state); F(ib_uverbs_modify_qp, path_mtu);
	F(ib_uverbs_modify_qp, path_mig_state); F(ib_uverbs_modify_qp, en_sqd_async_notify);
	F(ib_uverbs_modify_qp, max_rd_atomic); F(ib_uverbs_modify_qp, max_dest_rd_atomic);
	F(ib_uverbs_modify_qp, min_rnr_timer); F(ib_uverbs_modify_qp, port_num); F(ib_uverbs_modify_qp, timeout);
	F(ib_uverbs_modify_qp, retry_cnt); F(ib_uverbs_modify_qp, rnr_retry); F(ib_uverbs_modify_qp, alt_port_num);
	F(ib_uverbs_modify_qp, alt_timeout); F(ib_uverbs_modify_qp, reserved);

	S(ib_uverbs_query_qp); F(ib_uverbs_query_qp, response); F(ib_uverbs_query_qp, qp_handle); F(ib_uverbs_query_qp, attr_mask);
	S(ib_uverbs_query_qp_resp); F(ib_uverbs_query_qp_resp, dest); F(ib_uverbs_query_qp_resp, alt_dest);
	F(ib_uverbs_query_qp_resp, max_send_wr); F(ib_uverbs_query_qp_resp, max_recv_wr); F(ib_uverbs_query_qp_resp, max_send_sge);
	F(ib_uverbs_query_qp_resp, max_recv_sge); F(ib_uverbs_query_qp_resp, max_inline_data); F(ib_uverbs_query_qp_resp, qkey);
	F(ib_uverbs_query_qp_resp, rq_psn); F(ib_uverbs_query_qp_resp, sq_psn); F(ib_uverbs_query_qp_resp, dest_qp_num);
	F(ib_uverbs_query_qp_resp, qp_access_flags); F(ib_uverbs_query_qp_resp, pkey_index); F(ib_uverbs_query_qp_resp, alt_pkey_index);
	F(ib_uverbs_query_qp_resp, qp_state); F(ib_uverbs_query_qp_resp, cur_qp_state); F(ib_uverbs_query_qp_resp, path_mtu);
	F(ib_uverbs_query_qp_resp, path_mig_state); F(ib_uverbs_query_qp_resp, sq_draining); F(ib_uverbs_query_qp_resp, max_rd_atomic);
	F(ib_uverbs_query_qp_resp, max_dest_rd_atomic); F(ib_uverbs_query_qp_resp, min_rnr_timer); F(ib_uverbs_query_qp_resp, port_num);
	F(ib_uverbs_query_qp_resp, timeout); F(ib_uverbs_query_qp_resp, retry_cnt); F(ib_uverbs_query_qp_resp, rnr_retry);
	F(ib_uverbs_query_qp_resp, alt_port_num); F(ib_uverbs_query_qp_resp, alt_timeout); F(ib_uverbs_query_qp_resp, sq_sig_all);
	F(ib_uverbs_query_qp_resp, reserved);

	S(ib_uverbs_ah_attr); F(ib_uverbs_ah_attr, dlid); F(ib_uverbs_ah_attr, sl); F(ib_uverbs_ah_attr, src_path_bits);
	F(ib_uverbs_ah_attr, static_rate); F(ib_uverbs_ah_attr, is_global); F(ib_uverbs_ah_attr, port_num);
	F(ib_uverbs_ah_attr, reserved);
	S(ib_uverbs_global_route); F(ib_uverbs_global_route, dgid); F(ib_uverbs_global_route, flow_label);
	F(ib_uverbs_global_route, sgid_index); F(ib_uverbs_global_route, hop_limit); F(ib_uverbs_global_route, traffic_class);
	F(ib_uverbs_global_route, reserved);
	S(ib_uverbs_create_ah); F(ib_uverbs_create_ah, response); F(ib_uverbs_create_ah, user_handle);
	F(ib_uverbs_create_ah, pd_handle); F(ib_uverbs_create_ah, reserved); F(ib_uverbs_create_ah, attr);
	S(ib_uverbs_create_ah_resp); F(ib_uverbs_create_ah_resp, ah_handle);
	S(ib_uverbs_destroy_ah); F(ib_uverbs_destroy_ah, ah_handle);
	S(ib_uverbs_attach_mcast); F(ib_uverbs_attach_mcast, gid); F(ib_uverbs_attach_mcast, qp_handle);
	F(ib_uverbs_attach_mcast, mlid); F(ib_uverbs_attach_mcast, reserved);
	S(ib_uverbs_detach_mcast); F(ib_uverbs_detach_mcast, gid); F(ib_uverbs_detach_mcast, qp_handle);
	F(ib_uverbs_detach_mcast, mlid); F(ib_uverbs_detach_mcast, reserved);
	S(ib_uverbs_wc);

	S(ib_uverbs_create_srq); F(ib_uverbs_create_srq, response); F(ib_uverbs_create_srq, user_handle);
	F(ib_uverbs_create_srq, pd_handle); F(ib_uverbs_create_srq, max_wr); F(ib_uverbs_create_srq, max_sge);
	F(ib_uverbs_create_srq, srq_limit);
	S(ib_uverbs_create_srq_resp); F(ib_uverbs_create_srq_resp, srq_handle); F(ib_uverbs_create_srq_resp, max_wr);
	F(ib_uverbs_create_srq_resp, max_sge); F(ib_uverbs_create_srq_resp, srqn);
	S(ib_uverbs_destroy_srq); F(ib_uverbs_destroy_srq, response); F(ib_uverbs_destroy_srq, srq_handle);
	F(ib_uverbs_destroy_srq, reserved);
	S(ib_uverbs_destroy_srq_resp); F(ib_uverbs_destroy_srq_resp, events_reported);
	/* command numbers, as "name 0 value" */
	printf("IB_USER_VERBS_CMD_CREATE_SRQ 0 %d\n", IB_USER_VERBS_CMD_CREATE_SRQ);
	printf("IB_USER_VERBS_CMD_DESTROY_SRQ 0 %d\n", IB_USER_VERBS_CMD_DESTROY_SRQ);
	printf("IB_UVERBS_WR_ATOMIC_CMP_AND_SWP 0 %d\n", IB_UVERBS_WR_ATOMIC_CMP_AND_SWP);
	printf("IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD 0 %d\n", IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD);
	return 0;
}
