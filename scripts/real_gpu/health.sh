#!/bin/bash
# Records what the preflight's health checks read, on a real GPU machine, into $OUT (one tar):
# nvidia-smi -q (whole and -d PCI,ECC,MEMORY,PERFORMANCE), the --query-gpu CSV of the health
# fields (module_utils/gpu_health.py HEALTH_FIELDS), /proc/driver/nvidia/gpus/*/information,
# df /dev/shm, topo -m, the kernel log's NVRM lines, and the preflight's own GPU self-test
# (roles/gpu_preflight/files/gpu_selftest.py: p2p, nccl, and nccl with a deadline too short).
#   OUT=/tmp/out bash scripts/real_gpu/health.sh
set -u
out=${OUT:?set OUT}/health
mkdir -p "$out"
cd "$(dirname "$0")/../.."
run() { name=$1; shift; { "$@"; } >"$out/$name" 2>"$out/$name.err"; echo "$? $name: $*" >>"$out/steps.log"; }
date -u +%FT%TZ >"$out/date.txt"
run smi_q.txt nvidia-smi -q
run smi_q_d.txt nvidia-smi -q -d PCI,ECC,MEMORY,PERFORMANCE
run health_query.csv nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.gen.gpucurrent,pcie.link.gen.gpumax,pcie.link.gen.hostmax,pcie.link.width.current,pcie.link.width.max,persistence_mode,ecc.mode.current,ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,retired_pages.pending,remapped_rows.pending,remapped_rows.failure,memory.total,pstate --format=csv
run query.csv nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,memory.free,power.draw,power.limit,enforced.power.limit,power.max_limit,temperature.gpu,utilization.gpu,utilization.memory,clocks.current.sm,clocks.max.sm,clocks.current.memory,pcie.link.gen.current,pcie.link.width.current,compute_cap,persistence_mode,mig.mode.current --format=csv
run gpu_information.txt sh -c 'for f in /proc/driver/nvidia/gpus/*/information; do echo "== $f"; cat "$f"; done'
run df_shm.txt df -k /dev/shm
run topo_m.txt nvidia-smi topo -m
run topo_p2p_r.txt nvidia-smi topo -p2p r
run dmesg.txt sh -c 'dmesg 2>&1 | grep -i -E "nvrm|xid" | tail -50; echo "dmesg rc=$?"'
run journal_k.txt sh -c 'journalctl -k --no-pager 2>&1 | tail -5'
run nproc.txt sh -c 'nproc; cat /sys/fs/cgroup/cpuset.cpus.effective 2>/dev/null; grep Cpus_allowed_list /proc/self/status; ls /sys/devices/system/node 2>/dev/null'
run selftest_p2p.json python3 roles/gpu_preflight/files/gpu_selftest.py p2p --deadline 60
run selftest_nccl.json python3 roles/gpu_preflight/files/gpu_selftest.py nccl --deadline 120
run selftest_nccl_deadline.json python3 roles/gpu_preflight/files/gpu_selftest.py nccl --deadline 2
# the same all-reduce with the environment the reference VM's launch script exports
run selftest_nccl_p2p_disabled.json env NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 python3 roles/gpu_preflight/files/gpu_selftest.py nccl --deadline 120
tar -C "${OUT}" -czf "${OUT}/health.tar.gz" health && rm -rf "$out"
