"""SGLang's start-up lines, in SGLang's order and format."""

from __future__ import annotations

import re
import time

EXPECTED_ORDER = [
    r"\[\S+ \S+\] server_args=ServerArgs\(",
    r"\[\S+ \S+ TP0\] Load weight begin\. avail mem=",
    r"\[\S+ \S+ TP0\] Load weight end\. elapsed=[\d.]+ s, type=\w+, quant=modelopt_fp4, avail mem=",
    r"\[\S+ \S+ TP0\] KV Cache is allocated\. dtype: torch\.bfloat16, #tokens: 300000, KV size: [\d.]+ GB",
    r"\[\S+ \S+ TP0\] max_total_num_tokens=300000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
    r"max_running_requests=1024, context_len=\d+, available_gpu_mem=[\d.]+ GB",
    r"\[\S+ \S+\] INFO:     Started server process \[\d+\]",
    r"\[\S+ \S+\] INFO:     Uvicorn running on http://127\.0\.0\.1:\d+ \(Press CTRL\+C to quit\)",
    r"\[\S+ \S+\] The server is fired up and ready to roll!",
]


def test_startup_lines_in_order(start_server):
    srv = start_server("--standin-kv-tokens", "300000", "--max-running-requests", "1024",
                       "--quantization", "modelopt_fp4", "--disable-cuda-graph")
    out = srv.output()
    position = 0
    for pattern in EXPECTED_ORDER:
        match = re.compile(pattern).search(out, position)
        assert match, f"{pattern!r} not found after offset {position}:\n{out}"
        position = match.end()
    assert "Capture cuda graph" not in out


def test_decode_batch_lines(start_server):
    srv = start_server("--standin-decode-log-interval", "5", "--standin-time-scale", "0.002",
                       "--disable-cuda-graph")
    srv.json("POST", "/generate", {"text": "x", "sampling_params": {"max_new_tokens": 30}})
    deadline = time.monotonic() + 30
    pattern = re.compile(
        r"\[\S+ \S+ TP0\] Decode batch, #running-req: 1, #token: \d+, token usage: \d\.\d\d, "
        r"cuda graph: False, gen throughput \(token/s\): [\d.]+, #queue-req: 0")
    while not pattern.search(srv.output()):
        assert time.monotonic() < deadline, srv.output()
        time.sleep(0.1)
    assert re.search(r"TP0\] Prefill batch, #new-seq: 1, #new-token: 1, ", srv.output())
