#!/usr/bin/env bash
# Output throughput through SGLang's router (smg) with 1 worker and with 2, at one concurrency:
# two stand-in servers with the reference's tuned profile (max-running-requests 2048,
# num-continuous-decode-steps 8, the reference KV pool), smg in front of the first one, then of
# both, and SGLang's Rust client with the benchmark role's default options (5 x C prompts of
# 128 + 128 tokens) through the router each time. Prints each throughput and their ratio.
#   scripts/measure_router.sh [CONCURRENCY...]      (default 2048)
# Env: WORKERS (default "1 2": the runs), PROMPTS_PER_C (default 5), POLICY (default cache_aware),
# SGLANG_STANDIN_TIME_SCALE (the stand-in's, default 0.05: lower runs faster and sooner makes
# the stand-in's CPU the limit), SMG (the smg command, default .cache/smg-venv/bin/smg: make
# smg-venv), CLIENT (default .cache/client-venv/bin/python -m sglang.benchmark.rust_client:
# make client-venv), PYTHON (runs the stand-in), OUT (the logs' folder).
set -euo pipefail
cd "$(dirname "$0")/.."
SMG=${SMG:-.cache/smg-venv/bin/smg}
CLIENT=${CLIENT:-.cache/client-venv/bin/python -m sglang.benchmark.rust_client}
PYTHON=${PYTHON:-python3}
WORKERS=${WORKERS:-1 2}
PROMPTS_PER_C=${PROMPTS_PER_C:-5}
POLICY=${POLICY:-cache_aware}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
concurrencies=("${@:-2048}")
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
    --prometheus-host 127.0.0.1 --prometheus-port 31090 > "$OUT/smg-$n-$c.log" 2>&1 &
  local router=$!
  until curl -fs http://127.0.0.1:31000/readiness 2>/dev/null | grep -q "\"healthy_workers\":$n"; do sleep 0.5; done
  $CLIENT --backend sglang --base-url http://127.0.0.1:31000 --dataset-name random-ids \
    --random-input-len 128 --random-output-len 128 --random-range-ratio 1.0 --num-prompts $((PROMPTS_PER_C * c)) \
    --max-concurrency "$c" --request-rate inf --seed 1 --warmup-requests 1 \
    --output-file "$OUT/client-$n-$c.jsonl" --disable-tqdm --tokenize-prompt --vocab-size 32000 \
    --disable-retokenize --flush-cache > "$OUT/client-$n-$c.txt" 2>&1
  kill "$router"; wait "$router" 2>/dev/null || true
  awk -F: '/Output token throughput/ {gsub(/ /, "", $2); print $2}' "$OUT/client-$n-$c.txt"
}

for c in "${concurrencies[@]}"; do
  line="concurrency $c, policy $POLICY:"; first=""
  for n in $WORKERS; do
    tput=$(run "$n" "$c"); first=${first:-$tput}
    line="$line $n worker(s) $tput tok/s (x$(awk -v a="$first" -v b="$tput" 'BEGIN {printf "%.2f", b / a}'));"
  done
  served=$(for port in 31001 31002; do curl -fs "http://127.0.0.1:$port/metrics" | awk '/^sglang:num_requests_total/ {print $2}'; done | paste -sd/)
  echo "$line requests served by each worker so far: $served"
done
