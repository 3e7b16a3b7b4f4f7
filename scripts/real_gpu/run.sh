#!/usr/bin/env bash
# One run of real SGLang 0.5.11 on a GPU host with no network and no systemd, the project's own
# modules run against it; what it brings back became tests/fixtures/real-sglang-0.5.11/ (that
# folder's README section in tests/fixtures/README.md says which file came from which step).
#
# Two calls on the same machine (each may carry 64 MiB, so the wheels travel in two parts,
# made by scripts/real_gpu/wheels.sh, as docs/real-gpu.md says):
#   bash scripts/real_gpu/run.sh part1   # .whl1/ carried: sglang-kernel (repacked), transformers,
#                                        # tokenizers, ansible-core (+resolvelib, cryptography)
#   bash scripts/real_gpu/run.sh part2   # .whl2/ carried: sglang, flashinfer, the small deps;
#                                        # needs part1's /tmp/site1 and model (the same machine)
#   REAL_BUDGET_S=380 bash scripts/real_gpu/run.sh part3   # nothing carried: A and B again for
#                                        # the A/B repeats part2 had no time for
#   bash scripts/real_gpu/run.sh kvpool  # .whl2/ carried, after part1: which args change the KV
#                                        # pool (module_utils/engine_args.py kv_pool_args), one
#                                        # server at a time, each stopped once its pool is allocated
#   bash scripts/real_gpu/run.sh smg     # .whl3/ carried, after part1: smg 1.13.0 installed
#   bash scripts/real_gpu/run.sh loads   # .whl2/ carried, after smg: /v1/loads idle and busy, and
#                                        # which endpoints smg polls in front of real SGLang
# part1: host facts, nvidia-smi outputs (idle), gpu_facts, the model, the launch scripts.
# part2: three servers on the GPU (A: decode steps 1, max-running-requests unset; B: decode steps
# 8, max-running-requests 8192; C: max-running-requests 16, started without openai-harmony),
# sglang_health on A and C while they start, their endpoints and sglang_server_info once ready,
# sglang_bench at concurrency 8/64/256 on A with gpu_telemetry, an A/B of decode steps (A,B x3
# at 64), /metrics after load, sglang_log_info, and module_utils/engine_args.py's scan when the
# tree has it. Every wait is bounded: the whole of part2 ends within REAL_BUDGET_S (550 s) and
# always leaves what it has in $OUT/part2.tar.gz.
# On the H200 of 2026-12-02 (tests/fixtures/real-sglang-0.5.11) part2 had time for three of the
# six A/B runs: A was ready 152 s after launch (JIT and triton compiles, no caches yet), and each
# sglang_bench point took 43-64 s, about 22 s of it before the client started (ansible, and the
# module's probe of the venv with client_module auto; the role passes the checked module). part3
# ran the other three.
set -uo pipefail
stage=${1:?usage: run.sh part1|part2}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${REAL_RUN_DIR:-/tmp/realrun}
RES=$RUN/res-$stage
OUT=${OUT:-$RUN/out}
BUDGET=${REAL_BUDGET_S:-550}
REAL_READY_BY_S=${REAL_READY_BY_S:-300}  # part2: stop waiting for the servers this many seconds in
T0=$(date +%s)
PY=$(command -v python3)
TOOLS=("$PY" "$REPO/scripts/real_gpu/tools.py")
LOGS=$RUN/logs-$stage  # (each stage its own: part3 starts A and B again)
mkdir -p "$RES" "$OUT" "$LOGS"

left() { echo $((BUDGET - ($(date +%s) - T0))); }
ready_left() { echo $((REAL_READY_BY_S - ($(date +%s) - T0))); }
step() { echo "[$(date -u +%H:%M:%S) +$(($(date +%s) - T0))s] $*" | tee -a "$RES/steps.log"; }
module() { timeout "$(($3 + 30))" "${TOOLS[@]}" module "$1" "$RES/$2" "$4" "$3" 2>&1 | tee -a "$RES/steps.log"; }
pack() {
  step "pack"
  cp -f "$LOGS"/*.log "$RES/" 2>/dev/null
  cp -f "$RUN"/run_*.sh "$RES/" 2>/dev/null
  tar -C "$RUN" -czf "$OUT/$stage.tar.gz" "res-$stage"
  ls -la "$OUT"
}
trap pack EXIT

install() {  # install TARGET WHEEL...
  local target=$1 t
  shift
  step "install $# wheels -> $target"
  t=$(date +%s%N)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "$@" \
    >"$RES/pip-$(basename "$target").log" 2>&1 || { step "pip install failed"; tail -5 "$RES/pip-$(basename "$target").log"; return 1; }
  step "installed in $((($(date +%s%N) - t) / 1000000)) ms"
}

after_part1() {  # after_part1 [PATH...]: part1's site, model and launch scripts (and PATHs) are here
  local need
  for need in /tmp/site1 "$RUN/model/config.json" "$RUN/run_A.sh" "$@"; do
    [ -e "$need" ] || { step "no $need: not the machine part1 (and the stages before this one) ran on"; return 1; }
  done
}

# One small server on the GPU, as kvpool and loads start it: run_A.sh's environment and python (its
# PYTHONPATH the two installs'), then ONE_SERVER and the stage's own flags.
launch_head() { sed -n '1,/sglang.launch_server/p' "$RUN/run_A.sh" | sed 's#^export PYTHONPATH=.*#export PYTHONPATH=/tmp/site2:/tmp/site1#'; }
ONE_SERVER="--model-path $RUN/model --host 127.0.0.1 --port 30000 --tp-size 1 --attention-backend triton --sampling-backend pytorch --grammar-backend none"

smi_outputs() {  # smi_outputs DIR: what gpu_facts reads, and the rest of nvidia-smi's views
  mkdir -p "$1"
  local query
  query=$(cd "$REPO/module_utils" && "$PY" -c 'import nvidia_smi; print(" ".join(nvidia_smi.QUERY_ARGS))')
  nvidia-smi >"$1/smi.txt" 2>&1
  # shellcheck disable=SC2086
  nvidia-smi $query >"$1/query.csv" 2>&1
  nvidia-smi -q >"$1/smi_q.txt" 2>&1
  nvidia-smi -q -x >"$1/smi_q.xml" 2>&1
  nvidia-smi topo -m >"$1/topo_m.txt" 2>&1
  nvidia-smi topo -p2p r >"$1/topo_p2p_r.txt" 2>&1
  nvidia-smi -L >"$1/list.txt" 2>&1
  cat /proc/driver/nvidia/version >"$1/driver_version.txt" 2>&1
}

part1() {
  step "part1 on $(hostname), budget ${BUDGET}s"
  install /tmp/site1 "$REPO"/.whl1/*.whl || return 1
  export PYTHONPATH=/tmp/site1 HF_HUB_OFFLINE=1
  local nvcc cuda_home
  nvcc=$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc 2>/dev/null | head -1)
  if [ -n "${CUDA_HOME:-}" ]; then cuda_home=$CUDA_HOME
  elif [ -x /usr/local/cuda/bin/nvcc ]; then cuda_home=/usr/local/cuda
  else cuda_home=$(dirname "$(dirname "$(readlink -f "${nvcc:-/usr/local/cuda/bin/nvcc}")")"); fi
  {
    echo "python3: $PY"; "$PY" --version
    echo "nvcc: $nvcc"; "$nvcc" --version | tail -2
    echo "CUDA_HOME: $cuda_home"; echo "ninja: $(command -v ninja)"; ls -la "$(dirname "$PY")/python"
    uname -a; nproc; free -g | head -2; ldd --version | head -1
    "$PY" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0), "triton", triton.__version__)'
    "$PY" -m pip list 2>/dev/null | grep -i -E '^(torch|triton|transformers|tokenizers|huggingface|numpy|jinja2|pyyaml|typing.extensions|aiohttp|uvloop|ninja|cuda-|nvidia-ml) '
  } >"$RES/host.txt" 2>&1
  echo "$cuda_home" >"$RUN/cuda_home"
  step "nvidia-smi outputs (idle)"
  smi_outputs "$RES/smi-idle"
  step "import sgl_kernel (the repacked wheel)"
  "$PY" -c 'import sgl_kernel, os; print(sgl_kernel.__file__, os.listdir(os.path.dirname(sgl_kernel.__file__)))' >"$RES/sgl_kernel_import.txt" 2>&1
  tail -3 "$RES/sgl_kernel_import.txt"
  step "make the model"
  "${TOOLS[@]}" make-model "$RUN/model" >"$RES/make_model.txt" 2>&1
  tail -1 "$RES/make_model.txt"
  step "render the launch scripts (roles/sglang_server/templates/run_tp.sh.j2)"
  # A and B see openai-harmony (a declared dependency); C runs without it.
  (cd "$REPO" && ANSIBLE_LIBRARY=library ANSIBLE_MODULE_UTILS=module_utils "$PY" -m ansible playbook -i localhost, \
    scripts/real_gpu/render.yml -e "real_dir=$RUN" -e "real_venv=$(dirname "$(dirname "$PY")")" \
    -e "real_cuda_home=$cuda_home" -e "real_pythonpath=/tmp/site_harmony:/tmp/site2:/tmp/site1" \
    -e '{"real_pythonpath_of": {"C": "/tmp/site2:/tmp/site1"}}' -e "real_path=$PATH") >"$RES/render.txt" 2>&1
  tail -3 "$RES/render.txt"
  step "gpu_facts on the real nvidia-smi"
  module gpu_facts gpu_facts-idle.json 60 '{}'
}

start_server() {  # start_server NAME
  step "start server $1"
  date +%s.%N >"$RUN/start_$1"
  bash "$RUN/run_$1.sh" >"$LOGS/server_$1.log" 2>&1 </dev/null &
  echo $! >"$RUN/pid_$1"
}

bench() {  # bench RESULT CONCURRENCY LABEL_PROFILE REPEAT URL [NUM_PROMPTS]
  local extra=""
  [ -n "${6:-}" ] && extra=", \"num_prompts\": $6"
  module sglang_bench "$1" 150 "{\"python\": \"$PY\", \"url\": \"$5\", \"max_concurrency\": $2$extra, \"timeout\": 120,
    \"environment\": {\"HF_HOME\": \"$RUN/hf\"},
    \"labels\": {\"host\": \"h200\", \"profile\": \"$3\", \"run_id\": \"real-sglang-0.5.11\", \"repeat\": $4}}"
  "${TOOLS[@]}" split-bench "$RES/$1" "$RES/${1%.json}" | tee -a "$RES/steps.log"
}

part2() {
  step "part2 on $(hostname), budget ${BUDGET}s"
  after_part1 || return 1
  local wheels=()
  for w in "$REPO"/.whl2/*.whl; do case $w in */openai_harmony-*) ;; *) wheels+=("$w") ;; esac; done
  install /tmp/site2 "${wheels[@]}" || return 1
  install /tmp/site_harmony "$REPO"/.whl2/openai_harmony-*.whl || return 1
  export PYTHONPATH=/tmp/site_harmony:/tmp/site2:/tmp/site1 HF_HUB_OFFLINE=1 HF_HOME=$RUN/hf
  local A=http://127.0.0.1:30000 B=http://127.0.0.1:30001 C=http://127.0.0.1:30002

  # One server at a time until its KV pool is allocated: SGLang sizes the pool from the memory
  # free before and after loading the weights, so another server allocating in between would
  # take that memory from this one's measure.
  start_server A
  module sglang_health health-A-startup.json "$(ready_left)" "{\"url\": \"$A\", \"pid\": $(cat "$RUN/pid_A"), \"log_path\": \"$LOGS/server_A.log\", \"timeout\": $(ready_left)}" &
  local waits=$!
  "${TOOLS[@]}" wait-kv "$LOGS/server_A.log" 120 || step "A: no KV line within 120 s"
  start_server B
  "${TOOLS[@]}" wait-kv "$LOGS/server_B.log" 90 || step "B: no KV line within 90 s"
  start_server C
  module sglang_health health-C-startup.json "$(ready_left)" "{\"url\": \"$C\", \"pid\": $(cat "$RUN/pid_C"), \"log_path\": \"$LOGS/server_C.log\", \"timeout\": $(ready_left)}" &
  waits="$waits $!"
  step "wait for A, B and C"
  "${TOOLS[@]}" wait-ready "$RES/timings.json" "$(ready_left)" \
    "A=$A,$RUN/start_A,$LOGS/server_A.log" "B=$B,$RUN/start_B,$LOGS/server_B.log" \
    "C=$C,$RUN/start_C,$LOGS/server_C.log" | tee -a "$RES/steps.log"
  # shellcheck disable=SC2086
  wait $waits  # (the startup health waits: each ends by REAL_READY_BY_S, its own timeout)

  step "endpoints, server_info, nvidia-smi under load"
  for s in A B C; do
    local url
    url=$(eval echo "\$$s")
    for ep in server_info get_model_info health v1/models metrics; do
      "${TOOLS[@]}" get "$url/$ep" "$RES/$s-$(echo "$ep" | tr / _).before" >>"$RES/steps.log" 2>&1
    done
    grep -h "max_running_requests=" "$LOGS/server_$s.log" >"$RES/sched-$s.txt"
    # (a local URL's owner is checked first: the server's pid, as there is no systemd here)
    module sglang_server_info server_info-$s.json 60 "{\"url\": \"$url\", \"pid\": $(cat "$RUN/pid_$s")}"
  done
  module sglang_health health-A-ready.json 60 "{\"url\": \"$A\", \"pid\": $(cat "$RUN/pid_A"), \"log_path\": \"$LOGS/server_A.log\", \"timeout\": 60}"
  module sglang_health health-C-ready.json 60 "{\"url\": \"$C\", \"pid\": $(cat "$RUN/pid_C"), \"log_path\": \"$LOGS/server_C.log\", \"timeout\": 60}"
  smi_outputs "$RES/smi-load"
  module gpu_facts gpu_facts-load.json 60 '{}'

  step "sweep on A (8, 64, 256) with gpu_telemetry"
  module gpu_telemetry telemetry-started.json 30 "{\"state\": \"started\", \"path\": \"$RUN/telemetry/gpu.csv\", \"lease_seconds\": 600}"
  for c in 8 64 256; do
    [ "$(left)" -gt 150 ] || { step "skip concurrency $c: $(left) s left"; continue; }
    bench "bench-A-c$c.json" "$c" A-cds1 0 "$A"
  done
  cp -f "$RUN/telemetry/gpu.csv" "$RES/telemetry.csv" 2>/dev/null
  "$PY" - "$RES" >"$RES/telemetry-windows.json" <<'EOF'
import json, sys
from pathlib import Path
out = []
for path in sorted(Path(sys.argv[1]).glob("bench-A-c*.json")):
    result = json.loads(path.read_text()).get("result") or {}
    record = result.get("record") or {}
    window = record.get("telemetry_window") or {}
    out.append({"point": path.stem, "max_concurrency": record.get("max_concurrency"),
                "start": window.get("start", result.get("started")), "end": window.get("end", result.get("finished")),
                "raw_start": result.get("started"), "raw_end": result.get("finished")})
print(json.dumps(out))
EOF
  module gpu_telemetry telemetry-stopped.json 30 "{\"state\": \"stopped\", \"path\": \"$RUN/telemetry/gpu.csv\", \"windows\": $(cat "$RES/telemetry-windows.json")}"

  step "A/B: decode steps 1 (A) against 8 (B), concurrency 64, 320 prompts, interleaved"
  for r in 0 1 2; do
    for s in A B; do
      [ "$(left)" -gt 75 ] || { step "skip $s repeat $r: $(left) s left"; continue; }
      local url profile
      url=$(eval echo "\$$s")
      profile=$([ $s = A ] && echo A-cds1 || echo B-cds8)
      bench "ab-$s-r$r.json" 64 "$profile" "$r" "$url" 320
    done
  done

  step "after load"
  for s in A B; do
    local url
    url=$(eval echo "\$$s")
    "${TOOLS[@]}" get "$url/metrics" "$RES/$s-metrics.after" >>"$RES/steps.log" 2>&1
    "${TOOLS[@]}" get "$url/server_info" "$RES/$s-server_info.after" >>"$RES/steps.log" 2>&1
  done
  for s in A C; do
    module sglang_log_info log_info-$s.json 30 "{\"path\": \"$LOGS/server_$s.log\"}"
  done
  if [ -f "$REPO/module_utils/engine_args.py" ]; then
    step "module_utils/engine_args.py scan of the installed sglang"
    timeout 60 "${TOOLS[@]}" engine-args "$RES/engine_args.json" num-continuous-decode-steps max-running-requests \
      mem-fraction-static chunked-prefill-size cuda-graph-max-bs schedule-conservativeness 2>&1 | tail -5 | tee -a "$RES/steps.log"
  else
    step "no module_utils/engine_args.py in the tree: scan skipped"
  fi
  ps -eo pid,ppid,etimes,rss,args --sort=pid | grep -E "sglang|python" | grep -v grep >"$RES/ps.txt"
  for s in A B C; do kill "$(cat "$RUN/pid_$s")" 2>/dev/null; done
  sleep 3
}

part3() {  # the A/B runs part2 had no time for, on A and B started again (same scripts, warm caches)
  step "part3: A and B again for the rest of the A/B"
  export PYTHONPATH=/tmp/site_harmony:/tmp/site2:/tmp/site1 HF_HUB_OFFLINE=1 HF_HOME=$RUN/hf
  local A=http://127.0.0.1:30000 B=http://127.0.0.1:30001
  start_server A
  "${TOOLS[@]}" wait-kv "$LOGS/server_A.log" 120 || step "A: no KV line within 120 s"
  start_server B
  "${TOOLS[@]}" wait-ready "$RES/timings.json" 200 "A=$A,$RUN/start_A,$LOGS/server_A.log" \
    "B=$B,$RUN/start_B,$LOGS/server_B.log" | tee -a "$RES/steps.log"
  bench ab-B-r1.json 64 B-cds8 1 "$B" 320
  bench ab-A-r2.json 64 A-cds1 2 "$A" 320
  [ "$(left)" -gt 60 ] && bench ab-B-r2.json 64 B-cds8 2 "$B" 320
  grep -h "max_running_requests=" "$LOGS/server_A.log" "$LOGS/server_B.log" >"$RES/sched.txt"
  for s in A B; do kill "$(cat "$RUN/pid_$s")" 2>/dev/null; done
}

kvpool() {  # one server at a time, each args set's KV pool (its "KV Cache is allocated" line)
  step "kvpool on $(hostname), budget ${BUDGET}s"
  after_part1 || return 1
  [ -d /tmp/site2 ] || install /tmp/site2 "$REPO"/.whl2/*.whl || return 1
  local name args
  while IFS='|' read -r name args; do
    [ -n "$name" ] || continue
    [ "$(left)" -gt 90 ] || { step "skip $name: $(left) s left"; continue; }
    printf '%s\n  %s %s\n' "$(launch_head)" "$ONE_SERVER" "$args" >"$RUN/run_kv_$name.sh"
    step "kv $name: $args"
    setsid bash "$RUN/run_kv_$name.sh" >"$LOGS/server_kv_$name.log" 2>&1 </dev/null &
    local pid=$!
    "${TOOLS[@]}" wait-kv "$LOGS/server_kv_$name.log" 150 || step "$name: no KV line within 150 s"
    sleep 3  # (the scheduler's line with the limits follows the pool's)
    { echo "# $name: $args"; grep -hE "KV Cache is allocated|max_total_num_tokens=|mem_fraction_static" "$LOGS/server_kv_$name.log"; } \
      >>"$RES/kvpool.txt"
    kill -TERM -- "-$pid" 2>/dev/null; sleep 2; kill -KILL -- "-$pid" 2>/dev/null
    for _ in $(seq 1 30); do  # (the next pool is measured from free memory: wait for this one's to go)
      [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && break
      sleep 1
    done
  done <<'SETS'
auto-cps2048|--chunked-prefill-size 2048
auto-cps8192|--chunked-prefill-size 8192
mfs05-cps2048|--mem-fraction-static 0.5 --chunked-prefill-size 2048
mfs05-cps8192|--mem-fraction-static 0.5 --chunked-prefill-size 8192
mfs05-neutral|--mem-fraction-static 0.5 --chunked-prefill-size 2048 --schedule-policy lpm --stream-interval 8 --max-running-requests 64 --enable-metrics
SETS
  cat "$RES/kvpool.txt"
}

smg() {  # smg 1.13.0 (.whl3/, made by wheels.sh) into /tmp/site_smg, for the loads stage
  step "smg on $(hostname)"
  install /tmp/site_smg "$REPO"/.whl3/*.whl
}

loads() {  # real /v1/loads idle and under load, and smg 1.13.0 in front: which endpoint it polls
  step "loads on $(hostname), budget ${BUDGET}s"
  after_part1 /tmp/site_smg || return 1
  [ -d /tmp/site2 ] || install /tmp/site2 "$REPO"/.whl2/*.whl || return 1
  local S=http://127.0.0.1:30000 R=http://127.0.0.1:30080 i
  printf '%s\n  %s %s\n' "$(launch_head)" "$ONE_SERVER" "--enable-metrics --mem-fraction-static 0.5" >"$RUN/run_loads.sh"
  date +%s.%N >"$RUN/start_loads"
  setsid bash "$RUN/run_loads.sh" >"$LOGS/server_loads.log" 2>&1 </dev/null &
  local pid=$!
  "${TOOLS[@]}" wait-ready "$RES/timings.json" "$(ready_left)" "loads=$S,$RUN/start_loads,$LOGS/server_loads.log" | tee -a "$RES/steps.log"
  "${TOOLS[@]}" get "$S/v1/loads" "$RES/loads-idle.json" >>"$RES/steps.log" 2>&1
  "${TOOLS[@]}" get "$S/v1/loads?include=core,disagg,queues,memory" "$RES/loads-idle-smg.json" >>"$RES/steps.log" 2>&1
  "${TOOLS[@]}" get "$S/v1/loads?dp_rank=1" "$RES/loads-rank1.json" >>"$RES/steps.log" 2>&1
  step "smg in front (cache_aware, smg's defaults)"
  PYTHONPATH=/tmp/site_smg:/tmp/site2 setsid "$PY" -c 'import sys; from smg.launch_router import launch_router, parse_router_args; launch_router(parse_router_args(sys.argv[1:]))' \
    --worker-urls "$S" --policy cache_aware --host 127.0.0.1 --port 30080 --prometheus-host 127.0.0.1 \
    --prometheus-port 29000 >"$LOGS/smg.log" 2>&1 </dev/null &
  local smg_pid=$!
  for i in $(seq 1 60); do curl -fsS "$R/readiness" >/dev/null 2>&1 && break; sleep 1; done
  step "load through smg: 64 at a time, 256 requests of 128 + 512 tokens"
  "$PY" - "$R" >"$RES/load-through-smg.txt" 2>&1 <<'PYEOF' &
import concurrent.futures, json, sys, time, urllib.request
url = sys.argv[1] + "/generate"
def one(i):
    body = json.dumps({"input_ids": [(i * 7 + k) % 1000 + 10 for k in range(128)],
                       "sampling_params": {"max_new_tokens": 512, "ignore_eos": True}}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return r.status
t = time.time()
with concurrent.futures.ThreadPoolExecutor(64) as pool:
    codes = list(pool.map(one, range(256)))
print({c: codes.count(c) for c in set(codes)}, round(time.time() - t, 1), "s")
PYEOF
  local load=$!
  for i in 1 2 3 4 5 6; do
    sleep 3
    "${TOOLS[@]}" get "$S/v1/loads?include=core,disagg,queues,memory" "$RES/loads-busy-$i.json" >>"$RES/steps.log" 2>&1
  done
  wait "$load"; cat "$RES/load-through-smg.txt"
  sleep 12  # (one more poll of smg's, every 10 s, after the load)
  "${TOOLS[@]}" get "http://127.0.0.1:29000/metrics" "$RES/smg-metrics.txt" >>"$RES/steps.log" 2>&1
  grep -oE '"GET /(v1/loads|metrics|get_load|health|health_generate|model_info|get_model_info|server_info|get_server_info)[^ ]* HTTP' \
    "$LOGS/server_loads.log" | sort | uniq -c | tee "$RES/smg-polls.txt"
  cp -f "$LOGS/smg.log" "$RES/smg.log"
  kill -TERM -- "-$smg_pid" "-$pid" 2>/dev/null; sleep 2; kill -KILL -- "-$smg_pid" "-$pid" 2>/dev/null
}

"$stage"
