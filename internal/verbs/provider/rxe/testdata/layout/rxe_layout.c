/* Prints "struct.field offset size" for the rxe structs rxe_ring.go and
 * rxe_wqe.go encode; layout_test.go compiles it with gcc against
 * /usr/include/rdma (rdma/rdma_user_rxe.h) and compares. */
#include <stdio.h>
#include <stddef.h>
#include <rdma/rdma_user_rxe.h>

#define F(s, f) printf(#s "." #f " %zu %zu\n", offsetof(struct s, f), sizeof(((struct s *)0)->f))
#define O(s, f) printf(#s "." #f " %zu 0\n", offsetof(struct s, f))
#define S(s) printf(#s " 0 %zu\n", sizeof(struct s))

int main(void)
{
	/* rxe ring and WQE layouts used by rxe_ring.go / rxe_wqe.go. */
	F(rxe_queue_buf, log2_elem_size); F(rxe_queue_buf, index_mask); F(rxe_queue_buf, producer_index);
	F(rxe_queue_buf, consumer_index); O(rxe_queue_buf, data);
	S(rxe_send_wqe); F(rxe_send_wqe, wr.wr_id); F(rxe_send_wqe, wr.opcode); F(rxe_send_wqe, wr.send_flags);
	F(rxe_send_wqe, wr.ex.imm_data); F(rxe_send_wqe, wr.wr.rdma.remote_addr); F(rxe_send_wqe, wr.wr.rdma.rkey);
	F(rxe_send_wqe, wr.wr.ud.remote_qpn); F(rxe_send_wqe, wr.wr.ud.remote_qkey); F(rxe_send_wqe, wr.wr.ud.pkey_index);
	F(rxe_send_wqe, wr.wr.ud.ah_num); F(rxe_send_wqe, status); F(rxe_send_wqe, state); F(rxe_send_wqe, iova);
	F(rxe_send_wqe, ssn); F(rxe_send_wqe, dma.length); F(rxe_send_wqe, dma.resid); F(rxe_send_wqe, dma.num_sge);
	O(rxe_send_wqe, dma.sge); S(rxe_send_wr);
	S(rxe_recv_wqe); F(rxe_recv_wqe, wr_id); F(rxe_recv_wqe, dma.length); F(rxe_recv_wqe, dma.resid);
	F(rxe_recv_wqe, dma.num_sge); O(rxe_recv_wqe, dma.sge); S(rxe_sge);
	S(rxe_create_cq_resp); S(rxe_create_qp_resp); F(rxe_create_qp_resp, rq_mi); F(rxe_create_qp_resp, sq_mi);
	S(rxe_create_ah_resp); F(rxe_create_ah_resp, ah_num);
	F(rxe_send_wqe, wr.wr.atomic.remote_addr); F(rxe_send_wqe, wr.wr.atomic.compare_add);
	F(rxe_send_wqe, wr.wr.atomic.swap); F(rxe_send_wqe, wr.wr.atomic.rkey);
	S(rxe_create_srq_resp); F(rxe_create_srq_resp, mi); F(rxe_create_srq_resp, srq_num);
	F(mminfo, offset); F(mminfo, size);
	return 0;
}
