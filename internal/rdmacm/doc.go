// Package rdmacm speaks the RDMA connection manager's user ABI (UCMA,
// <rdma/rdma_user_cm.h>) on /dev/infiniband/rdma_cm, in pure Go, as
// librdmacm does in C: create and destroy CM ids, bind, listen, resolve an
// IP address and a route, connect, accept, reject, disconnect, read the
// events, and ask the kernel for the attributes of each QP transition
// (INIT_QP_ATTR). It owns no verbs objects: a caller creates its QP through
// internal/verbs on the device the id resolved to (Route), passes the QP
// number to Connect or Accept, and applies the QPAttr that InitQPAttr
// returns with its own MODIFY_QP, which is how librdmacm's
// rdma_init_qp_attr is used.
//
// Only the IPv4/IPv6 commands of ABI version 4 are used (BIND_IP,
// RESOLVE_IP, QUERY_ROUTE), which every kernel since 2.6 has; no AF_IB.
package rdmacm
