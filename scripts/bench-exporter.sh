#!/bin/bash
# bench-exporter.sh: the CPU time (user + system) of one exporter scrape
# against one 'rdmactl counters' run, on the devices of this host. Run it
# inside the VM (make bench-exporter boots one with 64 rxe devices). Prints
# figures; asserts nothing.
#
#   scrape      CPU the serving exporter process spends per scrape
#               (/proc/PID/stat utime+stime over N scrapes, divided by N)
#   --once      CPU of one 'rdmactl exporter --once' process (start-up included)
#   counters    CPU of one 'rdmactl counters' process (start-up included)
#
# The binary is copied to the guest's own file system first, as in
# bench-link.sh: paging it in over 9p would dominate every process run.
set -euo pipefail
BIN=${1:-bin/rdmactl}
N=${N:-20}
ADDR=${ADDR:-127.0.0.1:9879}
install -m 0755 "$BIN" /usr/local/bin/rdmactl-bench
R=/usr/local/bin/rdmactl-bench
TCK=$(getconf CLK_TCK)

ndev=$(ls /sys/class/infiniband | wc -l)
nports=$($R -j link show | grep -o '"ifname"' | wc -l)
ncount=$($R -j counters | grep -o '"name"' | wc -l)

# CPU ms of N runs of a command, from the shell's children times (bash
# 'times' prints user and system of the children, cumulative).
child_ms() {
	python3 - "$N" "$@" <<'PY'
import resource, subprocess, sys
n, cmd = int(sys.argv[1]), sys.argv[2:]
subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)  # warm up
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(n):
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.1f" % ((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000 / n))
PY
}

counters_ms=$(child_ms $R counters)
once_ms=$(child_ms $R exporter --once)

$R exporter --web.listen-address "$ADDR" --collector.go=false --collector.process=false > /dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf -o /dev/null "http://$ADDR/metrics" && break; sleep 0.2; done
curl -sf -o /dev/null "http://$ADDR/metrics" # warm up
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
c0=$(cpu)
for _ in $(seq "$N"); do curl -sf -o /dev/null "http://$ADDR/metrics"; done
c1=$(cpu)
scrape_ms=$(awk -v a="$c0" -v b="$c1" -v t="$TCK" -v n="$N" 'BEGIN { printf "%.1f", (b - a) * 1000 / t / n }')
series=$(curl -sf "http://$ADDR/metrics" | grep -vc '^#')

echo "devices $ndev, ports $nports, counters $ncount, series per scrape $series, N $N"
printf '%-28s %10s\n' what cpu_ms_each
printf '%-28s %10s\n' 'exporter scrape (served)' "$scrape_ms"
printf '%-28s %10s\n' 'rdmactl exporter --once' "$once_ms"
printf '%-28s %10s\n' 'rdmactl counters' "$counters_ms"
awk -v s="$scrape_ms" -v c="$counters_ms" 'BEGIN { if (c > 0) printf "scrape / counters = %.2f\n", s / c }'
