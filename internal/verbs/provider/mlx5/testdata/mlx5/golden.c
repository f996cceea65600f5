/* Oracle for the Go mlx5 provider (mlx5_test.go). Test-only: built by the
 * tests with gcc against rdma-core's installed headers; the product stays
 * cgo-free.
 *
 *   golden layout   prints "name value" lines: sizes and offsets of the
 *                   mlx5-abi.h udata structs and the mlx5dv.h segments and
 *                   CQE, and the enum values the Go code hard-codes.
 *   golden wqe      reads a table of send WRs on stdin and builds them into
 *                   an SQ the way rdma-core's _mlx5_post_send does, with
 *                   mlx5dv.h's mlx5dv_set_ctrl_seg / mlx5dv_set_data_seg
 *                   and its segment structs; writes the SQ bytes and the
 *                   final producer counter (u32, little-endian) to stdout.
 *
 *   golden cqe      reads CQE descriptions on stdin and writes each as a
 *                   struct mlx5_cqe64 (or mlx5_err_cqe) filled through the
 *                   header's field names and mlx5dv_set_cqe_owner.
 *   golden rwqe     reads receive WRs ("stride length lkey addr") and writes
 *                   each receive WQE as rdma-core's mlx5_post_recv builds it
 *                   (mlx5dv_set_data_seg, MLX5_INVALID_LKEY terminator).
 *   golden cqarm    reads "arm_sn cons_index cqn solicited" lines and writes,
 *                   per line, what rdma-core's mlx5_arm_cq leaves behind:
 *                   the CQ's 8-byte doorbell record (consumer index word as
 *                   poll left it, then the arm word) and the first 64 bytes
 *                   of the UAR page (the 64-bit doorbell at MLX5_CQ_DOORBELL).
 *
 * wqe input: first line "sq_wqe_cnt qpn cur_post"; then one WR per line:
 * "ibv_wr_opcode ibv_send_flags imm lkey addr length raddr rkey sigall seed"
 * (imm in host order; inline payload byte i is (uint8_t)(seed + 7*i)).
 */
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <rdma/mlx5-abi.h>
#include <rdma/mlx5_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>

#define S(T) printf("%s.size %zu\n", #T, sizeof(struct T))
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(struct T, f))
#define E(x) printf("%s %lld\n", #x, (long long)(x))

static int layout(void)
{
	S(mlx5_ib_alloc_ucontext_req_v2);
	F(mlx5_ib_alloc_ucontext_req_v2, total_num_bfregs);
	F(mlx5_ib_alloc_ucontext_req_v2, num_low_latency_bfregs);
	F(mlx5_ib_alloc_ucontext_req_v2, flags);
	F(mlx5_ib_alloc_ucontext_req_v2, comp_mask);
	F(mlx5_ib_alloc_ucontext_req_v2, max_cqe_version);
	F(mlx5_ib_alloc_ucontext_req_v2, reserved0);
	F(mlx5_ib_alloc_ucontext_req_v2, reserved1);
	F(mlx5_ib_alloc_ucontext_req_v2, reserved2);
	F(mlx5_ib_alloc_ucontext_req_v2, lib_caps);
	S(mlx5_ib_alloc_ucontext_resp);
	F(mlx5_ib_alloc_ucontext_resp, qp_tab_size);
	F(mlx5_ib_alloc_ucontext_resp, bf_reg_size);
	F(mlx5_ib_alloc_ucontext_resp, tot_bfregs);
	F(mlx5_ib_alloc_ucontext_resp, cache_line_size);
	F(mlx5_ib_alloc_ucontext_resp, max_sq_desc_sz);
	F(mlx5_ib_alloc_ucontext_resp, max_rq_desc_sz);
	F(mlx5_ib_alloc_ucontext_resp, max_send_wqebb);
	F(mlx5_ib_alloc_ucontext_resp, max_recv_wr);
	F(mlx5_ib_alloc_ucontext_resp, max_srq_recv_wr);
	F(mlx5_ib_alloc_ucontext_resp, num_ports);
	F(mlx5_ib_alloc_ucontext_resp, flow_action_flags);
	F(mlx5_ib_alloc_ucontext_resp, comp_mask);
	F(mlx5_ib_alloc_ucontext_resp, response_length);
	F(mlx5_ib_alloc_ucontext_resp, cqe_version);
	F(mlx5_ib_alloc_ucontext_resp, cmds_supp_uhw);
	F(mlx5_ib_alloc_ucontext_resp, eth_min_inline);
	F(mlx5_ib_alloc_ucontext_resp, clock_info_versions);
	F(mlx5_ib_alloc_ucontext_resp, hca_core_clock_offset);
	F(mlx5_ib_alloc_ucontext_resp, log_uar_size);
	F(mlx5_ib_alloc_ucontext_resp, num_uars_per_page);
	F(mlx5_ib_alloc_ucontext_resp, num_dyn_bfregs);
	F(mlx5_ib_alloc_ucontext_resp, dump_fill_mkey);
	S(mlx5_ib_create_cq);
	F(mlx5_ib_create_cq, buf_addr);
	F(mlx5_ib_create_cq, db_addr);
	F(mlx5_ib_create_cq, cqe_size);
	F(mlx5_ib_create_cq, cqe_comp_en);
	F(mlx5_ib_create_cq, cqe_comp_res_format);
	F(mlx5_ib_create_cq, flags);
	F(mlx5_ib_create_cq, uar_page_index);
	F(mlx5_ib_create_cq, reserved0);
	F(mlx5_ib_create_cq, reserved1);
	S(mlx5_ib_create_cq_resp);
	F(mlx5_ib_create_cq_resp, cqn);
	F(mlx5_ib_create_cq_resp, reserved);
	S(mlx5_ib_create_qp);
	F(mlx5_ib_create_qp, buf_addr);
	F(mlx5_ib_create_qp, db_addr);
	F(mlx5_ib_create_qp, sq_wqe_count);
	F(mlx5_ib_create_qp, rq_wqe_count);
	F(mlx5_ib_create_qp, rq_wqe_shift);
	F(mlx5_ib_create_qp, flags);
	F(mlx5_ib_create_qp, uidx);
	F(mlx5_ib_create_qp, bfreg_index);
	F(mlx5_ib_create_qp, sq_buf_addr);
	F(mlx5_ib_create_qp, ece_options);
	F(mlx5_ib_create_qp, dci_streams);
	F(mlx5_ib_create_qp, reserved);
	S(mlx5_ib_create_qp_resp);
	F(mlx5_ib_create_qp_resp, bfreg_index);
	F(mlx5_ib_create_qp_resp, ece_options);
	F(mlx5_ib_create_qp_resp, comp_mask);
	F(mlx5_ib_create_qp_resp, tirn);
	F(mlx5_ib_create_qp_resp, tisn);
	F(mlx5_ib_create_qp_resp, rqn);
	F(mlx5_ib_create_qp_resp, sqn);
	F(mlx5_ib_create_qp_resp, reserved1);
	F(mlx5_ib_create_qp_resp, tir_icm_addr);

	S(mlx5_ib_tso_caps);
	F(mlx5_ib_tso_caps, max_tso);
	F(mlx5_ib_tso_caps, supported_qpts);
	S(mlx5_ib_rss_caps);
	F(mlx5_ib_rss_caps, rx_hash_fields_mask);
	F(mlx5_ib_rss_caps, rx_hash_function);
	F(mlx5_ib_rss_caps, reserved);
	S(mlx5_packet_pacing_caps);
	F(mlx5_packet_pacing_caps, qp_rate_limit_min);
	F(mlx5_packet_pacing_caps, qp_rate_limit_max);
	F(mlx5_packet_pacing_caps, supported_qpts);
	F(mlx5_packet_pacing_caps, cap_flags);
	F(mlx5_packet_pacing_caps, reserved);
	S(mlx5_ib_query_device_resp);
	F(mlx5_ib_query_device_resp, comp_mask);
	F(mlx5_ib_query_device_resp, response_length);
	F(mlx5_ib_query_device_resp, tso_caps);
	F(mlx5_ib_query_device_resp, rss_caps);
	F(mlx5_ib_query_device_resp, cqe_comp_caps);
	F(mlx5_ib_query_device_resp, packet_pacing_caps);
	F(mlx5_ib_query_device_resp, mlx5_ib_support_multi_pkt_send_wqes);
	F(mlx5_ib_query_device_resp, flags);
	F(mlx5_ib_query_device_resp, sw_parsing_caps);
	F(mlx5_ib_query_device_resp, striding_rq_caps);
	F(mlx5_ib_query_device_resp, tunnel_offloads_caps);
	F(mlx5_ib_query_device_resp, dci_streams_caps);
	F(mlx5_ib_query_device_resp, reserved);
	E(MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE);

	/* CQE fields the decoder reads. */
	S(mlx5_cqe64);
	F(mlx5_cqe64, slid);
	F(mlx5_cqe64, flags_rqpn);
	F(mlx5_cqe64, imm_inval_pkey);
	F(mlx5_cqe64, byte_cnt);
	F(mlx5_cqe64, sop_drop_qpn);
	F(mlx5_cqe64, wqe_counter);
	F(mlx5_cqe64, op_own);
	S(mlx5_err_cqe);
	F(mlx5_err_cqe, vendor_err_synd);
	F(mlx5_err_cqe, syndrome);
	S(mlx5_wqe_ctrl_seg);
	S(mlx5_wqe_raddr_seg);
	S(mlx5_wqe_srq_next_seg); F(mlx5_wqe_srq_next_seg, next_wqe_index);
	S(mlx5_ib_create_srq); F(mlx5_ib_create_srq, buf_addr); F(mlx5_ib_create_srq, db_addr);
	F(mlx5_ib_create_srq, flags); F(mlx5_ib_create_srq, reserved0); F(mlx5_ib_create_srq, uidx);
	F(mlx5_ib_create_srq, reserved1);
	S(mlx5_ib_create_srq_resp); F(mlx5_ib_create_srq_resp, srqn); F(mlx5_ib_create_srq_resp, reserved);
	S(mlx5_wqe_atomic_seg);
	F(mlx5_wqe_atomic_seg, swap_add);
	F(mlx5_wqe_atomic_seg, compare);
	E(MLX5_OPCODE_ATOMIC_CS); E(MLX5_OPCODE_ATOMIC_FA);
	E(IBV_WR_ATOMIC_CMP_AND_SWP); E(IBV_WR_ATOMIC_FETCH_AND_ADD);
	E(IBV_WC_COMP_SWAP); E(IBV_WC_FETCH_ADD);
	S(mlx5_wqe_data_seg);
	S(mlx5_wqe_inl_data_seg);

	E(MLX5_SEND_WQE_BB); E(MLX5_INLINE_SEG); E(MLX5_INVALID_LKEY);
	E(MLX5_OPCODE_RDMA_WRITE); E(MLX5_OPCODE_RDMA_WRITE_IMM); E(MLX5_OPCODE_SEND);
	E(MLX5_OPCODE_SEND_IMM); E(MLX5_OPCODE_RDMA_READ);
	E(MLX5_WQE_CTRL_CQ_UPDATE); E(MLX5_WQE_CTRL_SOLICITED); E(MLX5_WQE_CTRL_FENCE);
	E(MLX5_CQE_REQ); E(MLX5_CQE_RESP_WR_IMM); E(MLX5_CQE_RESP_SEND); E(MLX5_CQE_RESP_SEND_IMM);
	E(MLX5_CQE_RESP_SEND_INV); E(MLX5_CQE_REQ_ERR); E(MLX5_CQE_RESP_ERR); E(MLX5_CQE_INVALID);
	E(MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR); E(MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR);
	E(MLX5_CQE_SYNDROME_LOCAL_PROT_ERR); E(MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
	E(MLX5_CQE_SYNDROME_MW_BIND_ERR); E(MLX5_CQE_SYNDROME_BAD_RESP_ERR);
	E(MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR); E(MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
	E(MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR); E(MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
	E(MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR); E(MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR);
	E(MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR);
	E(IBV_WC_SUCCESS); E(IBV_WC_LOC_LEN_ERR); E(IBV_WC_LOC_QP_OP_ERR); E(IBV_WC_LOC_PROT_ERR);
	E(IBV_WC_WR_FLUSH_ERR); E(IBV_WC_MW_BIND_ERR); E(IBV_WC_BAD_RESP_ERR);
	E(IBV_WC_LOC_ACCESS_ERR); E(IBV_WC_REM_INV_REQ_ERR); E(IBV_WC_REM_ACCESS_ERR);
	E(IBV_WC_REM_OP_ERR); E(IBV_WC_RETRY_EXC_ERR); E(IBV_WC_RNR_RETRY_EXC_ERR);
	E(IBV_WC_REM_ABORT_ERR); E(IBV_WC_GENERAL_ERR);
	E(IBV_WR_RDMA_WRITE); E(IBV_WR_RDMA_WRITE_WITH_IMM); E(IBV_WR_SEND);
	E(IBV_WR_SEND_WITH_IMM); E(IBV_WR_RDMA_READ);
	E(IBV_SEND_FENCE); E(IBV_SEND_SIGNALED); E(IBV_SEND_SOLICITED); E(IBV_SEND_INLINE);
	E(IBV_WC_SEND); E(IBV_WC_RDMA_WRITE); E(IBV_WC_RDMA_READ); E(IBV_WC_RECV);
	E(IBV_WC_RECV_RDMA_WITH_IMM); E(IBV_WC_GRH); E(IBV_WC_WITH_IMM);
	E(MLX5_IB_OBJECT_DEVX); E(MLX5_IB_METHOD_DEVX_OTHER); E(MLX5_IB_ATTR_DEVX_OTHER_CMD_IN);
	E(MLX5_IB_ATTR_DEVX_OTHER_CMD_OUT); E(MLX5_IB_ALLOC_UCTX_DEVX); E(MLX5_LIB_CAP_4K_UAR);
	E(MLX5_IB_MMAP_REGULAR_PAGE); E(RDMA_DRIVER_MLX5);
	E(MLX5_CQ_DOORBELL); E(MLX5_CQ_DB_REQ_NOT_SOL); E(MLX5_CQ_DB_REQ_NOT);
	return 0;
}

/* rdma-core qp.c mlx5_ib_opcode[] for the opcodes exercised. */
static uint8_t mlx5_op(int op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE: return MLX5_OPCODE_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return MLX5_OPCODE_RDMA_WRITE_IMM;
	case IBV_WR_SEND: return MLX5_OPCODE_SEND;
	case IBV_WR_SEND_WITH_IMM: return MLX5_OPCODE_SEND_IMM;
	case IBV_WR_RDMA_READ: return MLX5_OPCODE_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return MLX5_OPCODE_ATOMIC_CS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return MLX5_OPCODE_ATOMIC_FA;
	}
	fprintf(stderr, "golden: opcode %d not in the table\n", op);
	exit(2);
}

static int wqe(void)
{
	unsigned cnt, qpn, cur_post;
	if (scanf("%u %u %u", &cnt, &qpn, &cur_post) != 3)
		return 2;
	size_t qsz = (size_t)cnt * MLX5_SEND_WQE_BB;
	uint8_t *sq = calloc(1, qsz), *qend = sq + qsz;
	int op;
	unsigned flags, imm, lkey, len, rkey, sigall, seed;
	unsigned long long addr, raddr, cmp_add, swap;
	while (scanf("%d %u %u %u %llu %u %llu %u %u %u %llu %llu", &op, &flags, &imm, &lkey, &addr,
		     &len, &raddr, &rkey, &sigall, &seed, &cmp_add, &swap) == 12) {
		unsigned idx = cur_post & (cnt - 1);
		uint8_t *seg = sq + (size_t)idx * MLX5_SEND_WQE_BB;
		struct mlx5_wqe_ctrl_seg *ctrl = (void *)seg;
		int size = sizeof(*ctrl) / 16;
		uint8_t fm_ce_se = 0;

		/* rdma-core zeroes signature/stream id/fm_ce_se first. */
		*(uint32_t *)(seg + 8) = 0;
		seg += sizeof(*ctrl);
		if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ) {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;
			r->raddr = htobe64(raddr);
			r->rkey = htobe32(rkey);
			r->reserved = 0;
			seg += sizeof(*r);
			size += sizeof(*r) / 16;
		}
		if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			/* rdma-core qp.c: set_raddr_seg, then set_atomic_seg. */
			struct mlx5_wqe_raddr_seg *r = (void *)seg;
			r->raddr = htobe64(raddr);
			r->rkey = htobe32(rkey);
			r->reserved = 0;
			seg += sizeof(*r);
			struct mlx5_wqe_atomic_seg *a = (void *)seg;
			if (op == IBV_WR_ATOMIC_CMP_AND_SWP) {
				a->swap_add = htobe64(swap);
				a->compare = htobe64(cmp_add);
			} else {
				a->swap_add = htobe64(cmp_add);
				a->compare = 0;
			}
			seg += sizeof(*a);
			size += (sizeof(*r) + sizeof(*a)) / 16;
		}
		if (seg == qend)
			seg = sq;
		if ((flags & IBV_SEND_INLINE) && op != IBV_WR_RDMA_READ) {
			if (len) {
				struct mlx5_wqe_inl_data_seg *inl = (void *)seg;
				uint8_t *p = seg + sizeof(*inl);
				for (unsigned i = 0; i < len; i++) {
					if (p == qend)
						p = sq;
					*p++ = (uint8_t)(seed + 7 * i);
				}
				inl->byte_count = htobe32(len | MLX5_INLINE_SEG);
				size += (len + sizeof(*inl) + 15) / 16;
			}
		} else if (len) {
			mlx5dv_set_data_seg((void *)seg, len, lkey, (uintptr_t)addr);
			size++;
		}
		if ((flags & IBV_SEND_SIGNALED) || sigall)
			fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
		if (flags & IBV_SEND_SOLICITED)
			fm_ce_se |= MLX5_WQE_CTRL_SOLICITED;
		if (flags & IBV_SEND_FENCE)
			fm_ce_se |= MLX5_WQE_CTRL_FENCE;
		uint32_t cimm = 0;
		if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
			cimm = htobe32(imm); /* wr.imm_data is already big-endian */
		mlx5dv_set_ctrl_seg(ctrl, cur_post & 0xffff, mlx5_op(op), 0, qpn, fm_ce_se, size, 0, cimm);
		cur_post += (size * 16 + MLX5_SEND_WQE_BB - 1) / MLX5_SEND_WQE_BB;
	}
	fwrite(sq, 1, qsz, stdout);
	uint32_t le = htole32(cur_post);
	fwrite(&le, 1, 4, stdout);
	return 0;
}

/* cqe input, one per line:
 * "opcode owner qpn sop_opcode wqe_counter byte_cnt imm flags_rqpn slid syndrome vendor" */
static int cqe(void)
{
	unsigned op, owner, qpn, sop, ctr, cnt, imm, frq, slid, synd, vend;
	while (scanf("%u %u %u %u %u %u %u %u %u %u %u", &op, &owner, &qpn, &sop, &ctr, &cnt,
		     &imm, &frq, &slid, &synd, &vend) == 11) {
		struct mlx5_cqe64 c;
		memset(&c, 0, sizeof(c));
		c.sop_drop_qpn = htobe32(sop << 24 | qpn);
		c.wqe_counter = htobe16(ctr);
		c.byte_cnt = htobe32(cnt);
		c.imm_inval_pkey = htobe32(imm);
		c.flags_rqpn = htobe32(frq);
		c.slid = htobe16(slid);
		c.op_own = op << 4;
		mlx5dv_set_cqe_owner(&c, owner);
		if (op == MLX5_CQE_REQ_ERR || op == MLX5_CQE_RESP_ERR) {
			struct mlx5_err_cqe *e = (void *)&c;
			e->syndrome = synd;
			e->vendor_err_synd = vend;
		}
		if (mlx5dv_get_cqe_opcode(&c) != op || mlx5dv_get_cqe_owner(&c) != owner)
			return 3;
		fwrite(&c, 1, sizeof(c), stdout);
	}
	return 0;
}

static int rwqe(void)
{
	unsigned stride, len, lkey;
	unsigned long long addr;
	while (scanf("%u %u %u %llu", &stride, &len, &lkey, &addr) == 4) {
		uint8_t buf[256];
		memset(buf, 0xee, sizeof(buf)); /* bytes beyond the segments stay as they were */
		struct mlx5_wqe_data_seg *scat = (void *)buf;
		int max_gs = stride / sizeof(*scat);
		mlx5dv_set_data_seg(&scat[0], len, lkey, (uintptr_t)addr);
		if (max_gs > 1) {
			scat[1].byte_count = 0;
			scat[1].lkey = htobe32(MLX5_INVALID_LKEY);
			scat[1].addr = 0;
		}
		fwrite(buf, 1, stride, stdout);
	}
	return 0;
}

/* The arm of rdma-core's providers/mlx5/cq.c (mlx5_arm_cq), from mlx5dv.h's
 * MLX5_CQ_DB_REQ_NOT(_SOL) and MLX5_CQ_DOORBELL. The doorbell record's word
 * indices (MLX5_CQ_SET_CI 0, MLX5_CQ_ARM_DB 1) are in rdma-core's private
 * mlx5.h, not in mlx5dv.h; mmio_write64_be stores the big-endian value as
 * it is. */
static int cqarm(void)
{
	unsigned sn, ci, cqn, sol;
	while (scanf("%u %u %u %u", &sn, &ci, &cqn, &sol) == 4) {
		struct mlx5dv_cq cq;
		__be32 dbrec[2];
		uint8_t uar[64];
		memset(&cq, 0, sizeof(cq));
		memset(uar, 0, sizeof(uar));
		cq.dbrec = dbrec;
		cq.cq_uar = uar;
		cq.cqn = cqn;
		cq.dbrec[0] = htobe32(ci & 0xffffff); /* update_cons_index */
		cq.dbrec[1] = 0;

		uint32_t s = sn & 3;
		uint32_t c = ci & 0xffffff;
		uint32_t cmd = sol ? MLX5_CQ_DB_REQ_NOT_SOL : MLX5_CQ_DB_REQ_NOT;
		uint64_t doorbell = s << 28 | cmd | c;
		doorbell <<= 32;
		doorbell |= cq.cqn;
		cq.dbrec[1] = htobe32(s << 28 | cmd | c);
		uint64_t be = htobe64(doorbell);
		memcpy((uint8_t *)cq.cq_uar + MLX5_CQ_DOORBELL, &be, sizeof(be));

		fwrite(dbrec, 1, sizeof(dbrec), stdout);
		fwrite(uar, 1, sizeof(uar), stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "layout"))
		return layout();
	if (argc == 2 && !strcmp(argv[1], "wqe"))
		return wqe();
	if (argc == 2 && !strcmp(argv[1], "cqe"))
		return cqe();
	if (argc == 2 && !strcmp(argv[1], "rwqe"))
		return rwqe();
	if (argc == 2 && !strcmp(argv[1], "cqarm"))
		return cqarm();
	fprintf(stderr, "usage: golden layout|wqe|cqe|rwqe|cqarm\n");
	return 2;
}
