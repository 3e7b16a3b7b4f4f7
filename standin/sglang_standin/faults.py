"""The failures the stand-in can act out, printed the way SGLang 0.5.x prints them.

A scheduler (TP worker) that raises during start-up logs
`Scheduler hit an exception: Traceback ...`, signals its parent, and the parent logs
`Received sigquit from a child process. It usually means the child failed.` and
kills its own process tree with SIGKILL: the exit status is 137 (-9). A crash while
serving goes the same way through the tokenizer manager's SIGQUIT handler. A busy
HTTP port fails in uvicorn, which logs `[Errno 98] ...` and exits with status 1.
"""

from __future__ import annotations

import os
import signal
import sysconfig

from . import logs

SITE = sysconfig.get_paths()["purelib"]

OOM_ERROR = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a "
    "total capacity of 94.97 GiB of which 1.12 GiB is free. Including non-PyTorch memory, "
    "this process has 93.84 GiB memory in use. Of the allocated memory 91.37 GiB is "
    "allocated by PyTorch, and 1.02 GiB is reserved by PyTorch but unallocated. If reserved "
    "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "to avoid fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
NOT_ENOUGH_MEMORY_ERROR = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: mem_fraction_static={fraction}"
)
NCCL_ERROR = (
    "torch.distributed.DistBackendError: NCCL error in: "
    "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3699, unhandled system error "
    "(run with NCCL_DEBUG=INFO for details), NCCL version 2.27.5\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
    "device error. \n"
    "Last error:\n"
    "Error while creating shared memory segment /dev/shm/nccl-Xc1mNq (size 9637888)"
)
CUDA_CRASH_ERROR = (
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the "
    "stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
SIGQUIT_AT_LAUNCH = "Received sigquit from a child process. It usually means the child failed."
SIGQUIT_RUNNING = "SIGQUIT received. signum=None, frame=None. It usually means one child failed."


def _frames(*frames) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{SITE}/sglang/srt/{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    return "\n".join(lines)


_SCHEDULER_INIT = (
    ("managers/scheduler.py", 6362, "run_scheduler_process",
     "scheduler = Scheduler(server_args, port_args)"),
    ("managers/scheduler.py", 512, "__init__", "self.init_model_worker()"),
    ("managers/scheduler.py", 781, "init_model_worker", "self.init_tp_model_worker()"),
    ("managers/tp_worker.py", 248, "__init__", "self._init_model_runner()"),
    ("managers/tp_worker.py", 331, "_init_model_runner",
     "self._model_runner = ModelRunner("),
    ("model_executor/model_runner.py", 611, "__init__", "self.initialize(pre_model_load_memory)"),
)
TRACEBACKS = {
    "oom": _frames(
        *_SCHEDULER_INIT,
        ("model_executor/model_runner.py", 842, "initialize", "self.load_model()"),
        ("model_executor/model_runner.py", 1318, "load_model",
         "self.model = self.loader.load_model("),
        ("model_loader/loader.py", 701, "load_model", "self.load_weights_and_postprocess("),
        ("layers/quantization/modelopt_quant.py", 1544, "process_weights_after_loading",
         "layer.w13_weight = Parameter(w13_weight_swizzled, requires_grad=False)"),
    ) + "\n" + OOM_ERROR,
    "not_enough_memory": _frames(
        *_SCHEDULER_INIT,
        ("model_executor/model_runner.py", 905, "initialize", "self.init_memory_pool()"),
        ("model_executor/model_runner.py", 981, "init_memory_pool",
         "result = configurator.configure()"),
        ("model_executor/pool_configurator.py", 652, "configure",
         "return MemoryPoolConfig(max_total_num_tokens=max_total_num_tokens)"),
        ("model_executor/pool_configurator.py", 98, "__post_init__", "raise RuntimeError(msg)"),
    ) + "\n" + NOT_ENOUGH_MEMORY_ERROR,
    "nccl": _frames(
        *_SCHEDULER_INIT,
        ("model_executor/model_runner.py", 802, "initialize",
         "min_per_gpu_memory = self.init_torch_distributed()"),
        ("model_executor/model_runner.py", 1121, "init_torch_distributed",
         "initialize_model_parallel("),
        ("distributed/parallel_state.py", 1702, "initialize_model_parallel",
         "_TP = init_model_parallel_group("),
        ("distributed/parallel_state.py", 1421, "init_model_parallel_group",
         "return GroupCoordinator("),
        ("distributed/parallel_state.py", 312, "__init__",
         "self.pynccl_comm = PyNcclCommunicator("),
    ) + "\n" + NCCL_ERROR,
    "crash": _frames(
        ("managers/scheduler.py", 6368, "run_scheduler_process", "scheduler.run_event_loop()"),
        ("managers/scheduler.py", 1611, "run_event_loop", "dispatch_event_loop(self)"),
        ("managers/scheduler.py", 1702, "event_loop_overlap",
         "self.process_batch_result(tmp_batch, tmp_result)"),
        ("managers/scheduler_output_processor_mixin.py", 318, "process_batch_result_decode",
         "next_token_ids = next_token_ids.tolist()"),
    ) + "\n" + CUDA_CRASH_ERROR,
}


def _die() -> None:
    """What kill_process_tree(os.getpid()) does to the main process: SIGKILL itself."""
    logs.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def scheduler_exception(kind: str, running: bool = False, **fmt) -> None:
    """Log a scheduler exception of the given kind, then die like SGLang's launcher."""
    logs.scheduler_log.error("Scheduler hit an exception: %s", TRACEBACKS[kind].format(**fmt))
    logs.main_log.error(SIGQUIT_RUNNING if running else SIGQUIT_AT_LAUNCH)
    _die()


def port_in_use(host: str, port: int) -> None:
    """uvicorn's bind failure: logs the OSError, shuts the app down, exits 1."""
    logs.uvicorn_log.error(
        "[Errno 98] error while attempting to bind on address (%r, %d): address already in use",
        host, port,
    )
    logs.uvicorn_log.info("Waiting for application shutdown.")
    logs.uvicorn_log.info("Application shutdown complete.")
    logs.flush()
    os._exit(1)  # uvicorn's sys.exit(1); no asyncio teardown noise from inside the loop


def parse(spec: str):
    """'crash_after:5' -> ('crash_after', 5); 'oom' -> ('oom', None)."""
    if not spec:
        return None, None
    kind, _, arg = spec.partition(":")
    kind = kind.strip().lower().replace("-", "_")
    known = ("oom", "not_enough_memory", "nccl", "port_in_use", "hang", "crash_after")
    if kind not in known:
        raise ValueError(f"unknown --standin-fault {spec!r}; expected one of {', '.join(known)}")
    if kind == "crash_after":
        if not arg.isdigit():
            raise ValueError("--standin-fault crash_after needs a count: crash_after:N")
        return kind, int(arg)
    return kind, None
