#!/usr/bin/env bash
# Output throughput through SGLang's router (smg) with 1 worker and with 2, at one concurrency:
# two stand-in servers with the reference's tuned profile (max-running-requests 2048,
# num-continuous-decode-steps 8, the reference KV pool: 1,935 requests of 128 + 128 tokens fit),
# smg in front of the first one, then of both, and SGLang's Rust client (PROMPTS_PER_C x C prompts
# of 128 + 128 tokens) through the router each time. Prints each throughput, their ratio and how
# many requests of each run succeeded (a run with failures says so).
#   scripts/measure_router.sh [CONCURRENCY...]
# The default concurrency, 3870, is twice what one worker runs at once: one worker is saturated
# (its KV pool full, 1,935 requests queued) and two are each saturated, which is the fair point for
# "two workers against one"; below it two workers each run a half-full batch.
# Env: WORKERS (default "1 2": the runs), PROMPTS_PER_C (default 2), POLICY (default cache_aware),
# RATE (the client's --request-rate, default inf as the benchmark role's),
# SMG_ARGS (more smg flags, e.g. --disable-circuit-breaker),
# SGLANG_STANDIN_TIME_SCALE (default 0.5 here: at the stand-ins' own 0.05 two stand-ins, smg and
# the client need more than this machine's 2 cores and the CPU, not the workers, is measured),
# SMG (the smg command, default .cache/smg-venv/bin/smg: make smg-venv), CLIENT (default
# .cache/client-venv/bin/python -m sglang.benchmark.rust_client: make client-venv), PYTHON (runs
# the stand-in), OUT (the logs' folder).
set -euo pipefail
cd "$(dirname "$0")/.."
SMG=${SMG:-.cache/smg-venv/bin/smg}
CLIENT=${CLIENT:-.cache/client-venv/bin/python -m sglang.benchmark.rust_client}
PYTHON=${PYTHON:-python3}
WORKERS=${WORKERS:-1 2}
PROMPTS_PER_C=${PROMPTS_PER_C:-2}
export SGLANG_STANDIN_TIME_SCALE=${SGLANG_STANDIN_TIME_SCALE:-0.5}
SMG_ARGS=${SMG_ARGS:-}
RATE=${RATE:-inf}
POLICY=${POLICY:-cache_aware}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
concurrencies=("${@:-3870}")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

for port in 31001 31002; do
  PYTHONPATH=standin "$PYTHON" -m sglang_standin.launch_server --model-path lukealonso/GLM-5-NVFP4 \
    --host 127.0.0.1 --port "$port" --tp-size 8 --max-running-requests 2048 \
    --num-continuous-decode-steps 8 --enable-metrics > "$OUT/standin-$port.log" 2>&1 &
  pids+=($!)
done
for port in 31001 31002; do
  until curl -fs "http://127.0.0.1:$port/health" >/dev/null; do sleep 0.5; done
done

run() {  # workers concurrency
  local n=$1 c=$2 urls=(http://127.0.0.1:31001 http://127.0.0.1:31002)
  $SMG launch --worker-urls "${urls[@]:0:$n}" --policy "$POLICY" --host 127.0.0.1 --port 31000 \
    --prometheus-host 127.0.0.1 --prometheus-port 31090 $SMG_ARGS > "$OUT/smg-$n-$c.log" 2>&1 &
  local router=$!
  until curl -fs http://127.0.0.1:31000/readiness 2>/dev/null | grep -q "\"healthy_workers\":$n"; do sleep 0.5; done
  $CLIENT --backend sglang --base-url http://127.0.0.1:31000 --dataset-name random-ids \
    --random-input-len 128 --random-output-len 128 --random-range-ratio 1.0 --num-prompts $((PROMPTS_PER_C * c)) \
    --max-concurrency "$c" --request-rate "$RATE" --seed 1 --warmup-requests 1 \
    --output-file "$OUT/client-$n-$c.jsonl" --disable-tqdm --tokenize-prompt --vocab-size 32000 \
    --disable-retokenize --flush-cache > "$OUT/client-$n-$c.txt" 2>&1
  kill "$router"; wait "$router" 2>/dev/null || true
  awk -F: -v want=$((PROMPTS_PER_C * c)) '/Successful requests/ {gsub(/ /, "", $2); ok = $2}
    /Output token throughput/ {gsub(/ /, "", $2); tput = $2}
    END {printf "%s tok/s (%s/%s requests succeeded)", tput, ok, want}' "$OUT/client-$n-$c.txt"
}

for c in "${concurrencies[@]}"; do
  line="concurrency $c, policy $POLICY:"; first=""
  for n in $WORKERS; do
    result=$(run "$n" "$c"); tput=${result%% *}; first=${first:-$tput}
    line="$line $n worker(s) $result x$(awk -v a="$first" -v b="$tput" 'BEGIN {printf "%.2f", b / a}');"
  done
  served=$(for port in 31001 31002; do curl -fs "http://127.0.0.1:$port/metrics" | awk '/^sglang:num_requests_total/ {print $2}'; done | paste -sd/)
  echo "$line requests served by each worker so far: $served"
done
