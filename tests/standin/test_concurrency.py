"""256 concurrent streaming requests on a 2-core machine, without errors."""

from __future__ import annotations

import json
import threading

from sglang_standin import tokenizer

STREAMS = 256
TOKENS = 64


def test_256_concurrent_streams(start_server):
    srv = start_server()  # default time scale
    results: list = [None] * STREAMS
    start = threading.Barrier(STREAMS)

    def client(i: int) -> None:
        try:
            start.wait(timeout=120)
            events = srv.stream("/generate", {
                "input_ids": list(range(128)), "stream": True,
                "sampling_params": {"max_new_tokens": TOKENS, "ignore_eos": True},
            }, timeout=300)
            last = json.loads(events[-2])
            results[i] = (events[-1], last["meta_info"]["completion_tokens"],
                          len(tokenizer.encode(last["text"])), len(events) - 1)
        except Exception as exc:  # recorded, asserted below
            results[i] = exc

    threads = [threading.Thread(target=client, args=(i,)) for i in range(STREAMS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    errors = [r for r in results if not isinstance(r, tuple)]
    assert not errors, errors[:3]
    assert all(r == ("[DONE]", TOKENS, TOKENS, TOKENS) for r in results), results[:3]
    info = srv.json("GET", "/server_info")
    assert info["standin"] is True
    assert "Decode batch, #running-req: 256," in srv.output()
