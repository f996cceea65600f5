#!/bin/sh
# Qualify every RDMA path of a set of hosts with rdmactl perf mesh,
# launched by Open MPI's mpirun (no MPI library is involved: mpirun only
# starts the ranks and sets OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK).
# One rank per NIC, RANKS_PER_NODE a host (default 8), each testing its
# host's device at its local rank. mpirun does not say where rank 0 runs,
# so the rendezvous is the host file's first host, port 18600.
#
#   deploy/openmpi/perf-mesh.sh hosts.txt            # every pair, 5 s each
#   deploy/openmpi/perf-mesh.sh hosts.txt -D 10 -j   # perf mesh's options
#
# hosts.txt is mpirun's host file ("node01 slots=8" a line). RDMACTL
# names the binary (default: rdmactl on PATH), MESH_VERB write, read or
# send (default write). Exit status: perf mesh's, as mpirun passes it on.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 HOSTFILE [perf mesh options]" >&2; exit 2; }
hostfile=$1
shift
first=$(awk 'NF && $1 !~ /^#/ { print $1; exit }' "$hostfile")
[ -n "$first" ] || { echo "$0: $hostfile names no host" >&2; exit 2; }
exec mpirun --hostfile "$hostfile" --map-by "ppr:${RANKS_PER_NODE:-8}:node" --bind-to none \
	"${RDMACTL:-rdmactl}" perf mesh "${MESH_VERB:-write}" --device-per-rank --coordinator "$first:18600" "$@"
