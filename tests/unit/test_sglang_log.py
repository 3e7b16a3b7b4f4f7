"""module_utils.sglang_log on SGLang-format logs (tests/fixtures/sglang-logs)."""
from pathlib import Path

import pytest
from ansible.module_utils.sglang_log import LogWatcher, classify_log, strip_prefixes

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-logs"


def classify(name):
    return classify_log((LOGS / name).read_text())


def test_ready_tp8_startup_reports_the_capacity():
    state = classify("tp8-ready.log")
    assert state["ready"] is True
    assert state["failure_kind"] is None and state["failure_line"] is None
    assert state["max_total_num_tokens"] == 495488
    assert state["kv_cache_tokens"] == 495488
    assert state["max_running_requests"] == 2048
    assert state["context_len"] == 202752
    assert state["chunked_prefill_size"] == 8192
    assert state["max_prefill_tokens"] == 16384
    assert state["available_gpu_mem_gb"] == pytest.approx(7.83)
    assert state["last_decode"] == {"running_req": 2048, "token": 434176, "token_usage": 0.88,
                                    "cuda_graph": False, "gen_throughput": 2095.12, "queue_req": 0}


def test_journald_prefixes_give_the_same_answer():
    assert classify("tp8-ready.journal.log") == classify("tp8-ready.log")


@pytest.mark.parametrize("name, kind, line_start", [
    ("not-enough-memory.log", "not_enough_memory",
     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."),
    ("oom.log", "oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB."),
    ("nccl.log", "nccl", "RuntimeError: NCCL error: unhandled cuda error"),
    ("cuda-graph.log", "cuda_graph", "Exception: Capture cuda graph failed: CUDA out of memory."),
    ("port-in-use.log", "port_in_use", "ERROR:    [Errno 98] error while attempting to bind on address"),
    ("traceback.log", "traceback", "KeyError: 'model.layers.3.mlp.experts.w13_weight_scale_2'"),
])
def test_each_failure_fixture_has_its_kind_and_line(name, kind, line_start):
    state = classify(name)
    assert state["ready"] is False
    assert state["failure_kind"] == kind
    assert state["failure_line"].startswith(line_start)


def test_failure_before_the_memory_pool_has_no_capacity():
    state = classify("oom.log")
    assert state["max_total_num_tokens"] is None and state["max_running_requests"] is None


def test_kv_allocation_line_alone_gives_the_capacity():
    state = classify("cuda-graph.log")
    assert state["max_total_num_tokens"] == 495488 and state["max_running_requests"] is None


def test_traceback_after_ready_still_counts():
    state = classify("traceback-after-ready.log")
    assert state["ready"] is True
    assert state["failure_kind"] == "traceback"
    assert state["failure_line"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert state["last_decode"]["running_req"] == 2048


def test_streaming_watcher_follows_the_startup():
    watcher = LogWatcher()
    lines = (LOGS / "tp8-ready.log").read_text().splitlines()
    ready_at = next(i for i, line in enumerate(lines) if "fired up" in line)
    for line in lines[:ready_at]:
        watcher.feed(line)
    before = watcher.state()
    assert before["ready"] is False and before["failure_kind"] is None
    assert before["max_total_num_tokens"] == 495488
    watcher.feed(lines[ready_at])
    assert watcher.state()["ready"] is True
    assert watcher.lines_seen == ready_at + 1


def test_streaming_watcher_sees_a_failure_as_soon_as_it_is_printed():
    watcher = LogWatcher()
    for line in (LOGS / "nccl.log").read_text().splitlines():
        watcher.feed(line)
        if watcher.failure_kind:
            break
    # the NCCL WARN alone is not a failure; "Scheduler hit an exception" turns it into one
    assert watcher.failure_kind == "nccl"
    assert watcher.failure_line == ("sglang-vm:4190:4871 [2] NCCL WARN Cuda failure "
                                    "'peer access is not supported between these two devices'")
    assert watcher.state()["failure_kind"] == "nccl"


def test_nccl_warn_alone_on_a_healthy_start_is_not_a_failure():
    lines = (LOGS / "tp8-ready.log").read_text().splitlines()
    lines.insert(20, "sglang-vm:4187:4190 [0] NCCL WARN NET/Plugin: Could not find: libnccl-net.so.")
    state = classify_log(lines)
    assert state["ready"] is True and state["failure_kind"] is None


@pytest.mark.parametrize("lines, failure_line", [
    # a generic traceback after NCCL warnings: nccl, and the warning says why
    (["host:1:1 [0] NCCL WARN Call to ibv_create_qp failed",
      "Traceback (most recent call last):",
      '  File "x.py", line 1, in <module>',
      "RuntimeError: something went wrong"],
     "host:1:1 [0] NCCL WARN Call to ibv_create_qp failed"),
    # traceback frames that quote the error text are not the failure line
    (["Traceback (most recent call last):",
      '  File "pynccl_wrapper.py", line 329, in NCCL_CHECK',
      '    raise RuntimeError(f"NCCL error: {error_str}")',
      "RuntimeError: NCCL error: invalid usage"],
     "RuntimeError: NCCL error: invalid usage"),
])
def test_nccl_failure_line(lines, failure_line):
    state = classify_log(lines)
    assert state["failure_kind"] == "nccl"
    assert state["failure_line"] == failure_line


@pytest.mark.parametrize("lines, kind", [
    (["torch.distributed.DistBackendError: NCCL communicator was aborted"], "nccl"),
    (["RuntimeError: ncclInternalError: Internal check failed."], "nccl"),
    (["RuntimeError: CUDA error: out of memory"], "oom"),
    (["zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30001')"], "port_in_use"),
    (["Exception: Capture cuda graph failed: boom", "torch.OutOfMemoryError: CUDA out of memory."],
     "cuda_graph"),
    (["RuntimeError: CUDA error: out of memory",
      "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."], "not_enough_memory"),
    (["CUDA graph capture failed.", "To work around this error, add --disable-cuda-graph"], "cuda_graph"),
    (["[2026-11-29 09:00:19] Received sigquit from a child process. It usually means the child failed."],
     "traceback"),
    (["INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"], None),
])
def test_priority_and_single_messages(lines, kind):
    assert classify_log(lines)["failure_kind"] == kind


def test_newer_decode_line_format_with_comma():
    state = classify_log(["[2026-05-06 19:11:50 TP0] Decode batch, #running-req: 3, #token: 900, "
                          "token usage: 0.01, cuda graph: True, gen throughput (token/s): 250.5, #queue-req: 1"])
    assert state["last_decode"] == {"running_req": 3, "token": 900, "token_usage": 0.01,
                                    "cuda_graph": True, "gen_throughput": 250.5, "queue_req": 1}


@pytest.mark.parametrize("raw, message", [
    ("Nov 29 09:00:01 gpu-vm run_tp8.sh[123]: [2026-11-29 09:00:01 TP0] Load weight begin.",
     "Load weight begin."),
    ("2026-11-29T09:00:01+0000 gpu-vm sglang-server[77]: The server is fired up and ready to roll!",
     "The server is fired up and ready to roll!"),
    ("[2026-11-29 09:00:01 DP0 TP3 EP3] KV Cache is allocated. #tokens: 10",
     "KV Cache is allocated. #tokens: 10"),
    ("\x1b[32m[2026-11-29 09:00:01] INFO:     Started server process [4187]\x1b[0m\n",
     "INFO:     Started server process [4187]"),
    ("plain line", "plain line"),
])
def test_strip_prefixes(raw, message):
    assert strip_prefixes(raw) == message


def test_empty_log():
    state = classify_log("")
    assert state["ready"] is False and state["failure_kind"] is None
    assert state["max_total_num_tokens"] is None and state["last_decode"] is None


# --- Tracebacks SGLang catches and goes on from (the log format has no level name) ---------------

HARMONY = "ModuleNotFoundError: No module named 'openai_harmony'"


def harmony_lines():
    return (LOGS / "caught-warning-traceback.log").read_text().splitlines()


def test_a_caught_warning_traceback_before_ready_is_not_a_failure():
    """SGLang 0.5.11 without openai-harmony: http_server.py's lifespan logs the ImportError's
    traceback at WARNING and the server becomes ready (caught-warning-traceback.log)."""
    state = classify("caught-warning-traceback.log")
    assert state["ready"] is True
    assert state["failure_kind"] is None and state["failure_line"] is None
    assert state["caught_errors"] == [HARMONY]
    assert state["max_total_num_tokens"] == 495488 and state["last_decode"]["running_req"] == 2048


def test_the_caught_traceback_through_the_journal_gives_the_same_answer():
    journal = [f"Nov 29 09:03:{i % 60:02d} sglang-vm run_tp8.sh[4187]: {line}" for i, line in enumerate(harmony_lines())]
    assert classify_log(journal) == classify("caught-warning-traceback.log")


def test_streaming_a_traceback_waits_for_what_follows_it():
    lines = harmony_lines()
    error_at = lines.index(HARMONY)
    watcher = LogWatcher().feed_lines(lines[:error_at + 2])  # the traceback and its blank line
    assert watcher.failure_kind is None and watcher.pending_error == HARMONY
    watcher.feed(lines[error_at + 2])  # "[...] INFO:     Application startup complete."
    assert watcher.pending_error is None and watcher.caught_errors == [HARMONY]
    assert watcher.failure_kind is None


def test_a_traceback_the_log_ends_on_is_a_failure():
    """The process died right after it (an uncaught exception): nothing follows the traceback."""
    lines = harmony_lines()
    state = classify_log(lines[:lines.index(HARMONY) + 2])
    assert state["ready"] is False
    assert state["failure_kind"] == "traceback" and state["failure_line"] == HARMONY
    assert state["caught_errors"] == []


def test_a_crash_after_a_caught_traceback_names_the_crash():
    crash = (LOGS / "traceback-after-ready.log").read_text().splitlines()
    crash = crash[next(i for i, line in enumerate(crash) if "Scheduler hit an exception" in line):]
    state = classify_log(harmony_lines() + crash)
    assert state["ready"] is True and state["failure_kind"] == "traceback"
    assert state["failure_line"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert state["caught_errors"] == [HARMONY]


def sglang_logged(message, error, level="warning"):
    """What logger.<level>(message, exc_info=True) writes with SGLang's log format
    (srt/utils/common.py configure_logger): Python's logging formats the traceback."""
    import io
    import logging
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(message)s", datefmt="%Y-%m-%d %H:%M:%S"))
    logger = logging.getLogger(f"sglang-test-{message}")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        raise error
    except Exception:
        getattr(logger, level)(message, exc_info=True)
    return stream.getvalue().splitlines()


@pytest.mark.parametrize("message, error, level", [
    # srt/multimodal/audio_from_video.py: logger.warning("Error extracting audio from video", exc_info=True)
    ("Error extracting audio from video", RuntimeError("NCCL error: unhandled cuda error"), "warning"),
    # srt/entrypoints/openai/serving_tokenize.py: logger.error("Error during tokenization", exc_info=True),
    # per request, and the server goes on serving
    ("Error during tokenization", RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), "error"),
])
def test_a_logged_traceback_followed_by_progress_is_caught_whatever_its_error(message, error, level):
    lines = harmony_lines()
    ready_at = next(i for i, line in enumerate(lines) if "fired up" in line)
    logged = sglang_logged(message, error, level)
    assert logged[1] == "Traceback (most recent call last):"  # (exc_info: the traceback under the message)
    state = classify_log(lines[:ready_at + 1] + logged + lines[ready_at + 1:])
    assert state["ready"] is True and state["failure_kind"] is None
    assert state["caught_errors"] == [HARMONY, logged[-1]]


@pytest.mark.parametrize("line", [
    # sglang 0.5.11's fatal paths, as they log them (module_utils/sglang_log.py FATAL_MESSAGES)
    "[2026-11-29 09:05:22] TokenizerManager hit an exception: Traceback (most recent call last):",
    "[2026-11-29 09:05:22] DetokenizerManager hit an exception: Traceback (most recent call last):",
    "[2026-11-29 09:05:22] DataParallelController hit an exception: Traceback (most recent call last):",
    "[2026-11-29 09:05:22] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    "[2026-11-29 09:05:22] Initialization failed. warmup error: Traceback (most recent call last):",
    "[2026-11-29 09:05:22] Subprocess scheduler_0 (pid=4190) crashed with exit code -9. Triggering SIGQUIT for cleanup...",
    "[2026-11-29 09:05:22 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)",
    "RuntimeError: Rank 3 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
    "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
])
def test_sglang_fatal_messages_are_failures_at_once(line):
    lines = harmony_lines()
    ready_at = next(i for i, line in enumerate(lines) if "fired up" in line)
    watcher = LogWatcher().feed_lines(lines[:ready_at + 1] + [line])
    assert watcher.failure_kind == "traceback"  # (no end(): the health wait fails on it at once)


def test_a_soft_watchdog_timeout_only_warns():
    state = classify_log(harmony_lines() + [
        "[2026-11-29 09:05:22 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)",
        "[2026-11-29 09:05:24 TP0] Decode batch. #running-req: 8, #token: 900, token usage: 0.01, "
        "cuda graph: True, gen throughput (token/s): 250.5, #queue-req: 0, "])
    assert state["failure_kind"] is None
