/* Prints sizeof and offsetof of the UCMA structs mirrored in abi.go, for
 * layout_test.go. Test-only: the product is cgo-free. One line each:
 *   <struct> size <n>
 *   <struct>.<field> <offset>
 */
#include <stddef.h>
#include <stdio.h>
#include <rdma/rdma_user_cm.h>

#define S(T) printf("%s size %zu\n", #T, sizeof(struct T))
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(struct T, f))

int main(void)
{
	S(rdma_ucm_cmd_hdr); F(rdma_ucm_cmd_hdr, cmd); F(rdma_ucm_cmd_hdr, in); F(rdma_ucm_cmd_hdr, out);
	S(rdma_ucm_create_id); F(rdma_ucm_create_id, uid); F(rdma_ucm_create_id, response);
	F(rdma_ucm_create_id, ps); F(rdma_ucm_create_id, qp_type); F(rdma_ucm_create_id, reserved);
	S(rdma_ucm_create_id_resp); F(rdma_ucm_create_id_resp, id);
	S(rdma_ucm_destroy_id); F(rdma_ucm_destroy_id, response); F(rdma_ucm_destroy_id, id); F(rdma_ucm_destroy_id, reserved);
	S(rdma_ucm_destroy_id_resp); F(rdma_ucm_destroy_id_resp, events_reported);
	S(rdma_ucm_bind_ip); F(rdma_ucm_bind_ip, response); F(rdma_ucm_bind_ip, addr); F(rdma_ucm_bind_ip, id);
	S(rdma_ucm_resolve_ip); F(rdma_ucm_resolve_ip, src_addr); F(rdma_ucm_resolve_ip, dst_addr);
	F(rdma_ucm_resolve_ip, id); F(rdma_ucm_resolve_ip, timeout_ms);
	S(rdma_ucm_resolve_route); F(rdma_ucm_resolve_route, id); F(rdma_ucm_resolve_route, timeout_ms);
	S(rdma_ucm_query); F(rdma_ucm_query, response); F(rdma_ucm_query, id); F(rdma_ucm_query, option);
	S(rdma_ucm_query_route_resp); F(rdma_ucm_query_route_resp, node_guid); F(rdma_ucm_query_route_resp, ib_route);
	F(rdma_ucm_query_route_resp, src_addr); F(rdma_ucm_query_route_resp, dst_addr);
	F(rdma_ucm_query_route_resp, num_paths); F(rdma_ucm_query_route_resp, port_num);
	F(rdma_ucm_query_route_resp, reserved); F(rdma_ucm_query_route_resp, ibdev_index);
	F(rdma_ucm_query_route_resp, reserved1);
	S(rdma_ucm_conn_param); F(rdma_ucm_conn_param, qp_num); F(rdma_ucm_conn_param, qkey);
	F(rdma_ucm_conn_param, private_data); F(rdma_ucm_conn_param, private_data_len); F(rdma_ucm_conn_param, srq);
	F(rdma_ucm_conn_param, responder_resources); F(rdma_ucm_conn_param, initiator_depth);
	F(rdma_ucm_conn_param, flow_control); F(rdma_ucm_conn_param, retry_count);
	F(rdma_ucm_conn_param, rnr_retry_count); F(rdma_ucm_conn_param, valid);
	S(ib_uverbs_global_route); F(ib_uverbs_global_route, dgid); F(ib_uverbs_global_route, flow_label);
	F(ib_uverbs_global_route, sgid_index); F(ib_uverbs_global_route, hop_limit);
	F(ib_uverbs_global_route, traffic_class); F(ib_uverbs_global_route, reserved);
	S(ib_uverbs_ah_attr); F(ib_uverbs_ah_attr, grh); F(ib_uverbs_ah_attr, dlid); F(ib_uverbs_ah_attr, sl);
	F(ib_uverbs_ah_attr, src_path_bits); F(ib_uverbs_ah_attr, static_rate); F(ib_uverbs_ah_attr, is_global);
	F(ib_uverbs_ah_attr, port_num); F(ib_uverbs_ah_attr, reserved);
	S(rdma_ucm_ud_param); F(rdma_ucm_ud_param, qp_num); F(rdma_ucm_ud_param, qkey); F(rdma_ucm_ud_param, ah_attr);
	F(rdma_ucm_ud_param, private_data); F(rdma_ucm_ud_param, private_data_len); F(rdma_ucm_ud_param, reserved);
	S(rdma_ucm_ece); F(rdma_ucm_ece, vendor_id); F(rdma_ucm_ece, attr_mod);
	S(rdma_ucm_connect); F(rdma_ucm_connect, conn_param); F(rdma_ucm_connect, id); F(rdma_ucm_connect, reserved);
	F(rdma_ucm_connect, ece);
	S(rdma_ucm_listen); F(rdma_ucm_listen, id); F(rdma_ucm_listen, backlog);
	S(rdma_ucm_accept); F(rdma_ucm_accept, uid); F(rdma_ucm_accept, conn_param); F(rdma_ucm_accept, id);
	F(rdma_ucm_accept, reserved); F(rdma_ucm_accept, ece);
	S(rdma_ucm_reject); F(rdma_ucm_reject, id); F(rdma_ucm_reject, private_data_len); F(rdma_ucm_reject, reason);
	F(rdma_ucm_reject, reserved); F(rdma_ucm_reject, private_data);
	S(rdma_ucm_disconnect); F(rdma_ucm_disconnect, id);
	S(rdma_ucm_init_qp_attr); F(rdma_ucm_init_qp_attr, response); F(rdma_ucm_init_qp_attr, id);
	F(rdma_ucm_init_qp_attr, qp_state);
	S(rdma_ucm_get_event); F(rdma_ucm_get_event, response);
	S(rdma_ucm_event_resp); F(rdma_ucm_event_resp, uid); F(rdma_ucm_event_resp, id); F(rdma_ucm_event_resp, event);
	F(rdma_ucm_event_resp, status); F(rdma_ucm_event_resp, param); F(rdma_ucm_event_resp, reserved);
	F(rdma_ucm_event_resp, ece);
	S(rdma_ucm_set_option); F(rdma_ucm_set_option, optval); F(rdma_ucm_set_option, id); F(rdma_ucm_set_option, level);
	F(rdma_ucm_set_option, optname); F(rdma_ucm_set_option, optlen);
	S(ib_uverbs_qp_attr); F(ib_uverbs_qp_attr, qp_attr_mask); F(ib_uverbs_qp_attr, qp_state);
	F(ib_uverbs_qp_attr, cur_qp_state); F(ib_uverbs_qp_attr, path_mtu); F(ib_uverbs_qp_attr, path_mig_state);
	F(ib_uverbs_qp_attr, qkey); F(ib_uverbs_qp_attr, rq_psn); F(ib_uverbs_qp_attr, sq_psn);
	F(ib_uverbs_qp_attr, dest_qp_num); F(ib_uverbs_qp_attr, qp_access_flags); F(ib_uverbs_qp_attr, ah_attr);
	F(ib_uverbs_qp_attr, alt_ah_attr); F(ib_uverbs_qp_attr, max_send_wr); F(ib_uverbs_qp_attr, max_recv_wr);
	F(ib_uverbs_qp_attr, max_send_sge); F(ib_uverbs_qp_attr, max_recv_sge); F(ib_uverbs_qp_attr, max_inline_data);
	F(ib_uverbs_qp_attr, pkey_index); F(ib_uverbs_qp_attr, alt_pkey_index); F(ib_uverbs_qp_attr, en_sqd_async_notify);
	F(ib_uverbs_qp_attr, sq_draining); F(ib_uverbs_qp_attr, max_rd_atomic); F(ib_uverbs_qp_attr, max_dest_rd_atomic);
	F(ib_uverbs_qp_attr, min_rnr_timer); F(ib_uverbs_qp_attr, port_num); F(ib_uverbs_qp_attr, timeout);
	F(ib_uverbs_qp_attr, retry_cnt); F(ib_uverbs_qp_attr, rnr_retry); F(ib_uverbs_qp_attr, alt_port_num);
	F(ib_uverbs_qp_attr, alt_timeout); F(ib_uverbs_qp_attr, reserved);
	return 0;
}
