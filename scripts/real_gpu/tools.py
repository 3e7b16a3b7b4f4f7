"""Helpers of scripts/real_gpu/run.sh: the steps of one run of real SGLang on a GPU host that
are easier in Python than in bash. Standard library only, except make-model (torch and
transformers, the host's).

    python tools.py make-model DIR             a random-weight Llama and the stand-in's tokenizer
    python tools.py module NAME OUT.json JSON  run a project module through `ansible`, save its result
    python tools.py wait-kv LOG SECONDS        wait until LOG shows the KV cache allocated
    python tools.py wait-ready OUT.json SECONDS NAME=URL,START_FILE,LOG ...
    python tools.py get URL OUT                one GET, the body to OUT and code/seconds to OUT.meta.json
    python tools.py split-bench RESULT.json PREFIX   the client's stdout and JSONL of an sglang_bench result
    python tools.py engine-args OUT.json FLAG ...     module_utils/engine_args.py's scan, when the tree has it
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def make_model(folder: str) -> None:
    """A 4-layer Llama (hidden 512, 8 heads, vocab 32064) with random weights, saved with
    save_pretrained, and the stand-in's tokenizer (scripts/make_standin_tokenizer.py) beside it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    sys.path.insert(0, str(REPO / "scripts"))
    import make_standin_tokenizer

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=512, intermediate_size=1536, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=8, vocab_size=32064,
                         max_position_embeddings=4096, tie_word_embeddings=False,
                         bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    out = Path(folder)
    model.save_pretrained(out)
    for name, text in make_standin_tokenizer.files().items():
        if name != "config.json":  # (the model's own config.json stays)
            (out / name).write_text(text)
    print(json.dumps({"model": str(out), "parameters": sum(p.numel() for p in model.parameters()),
                      "files": sorted(p.name for p in out.iterdir())}))


_RESULT = re.compile(r"^localhost \| ([A-Z!]+)(?: \| rc=\d+)? => ", re.M)


def run_module(name: str, out: str, args_json: str, timeout: float = 600) -> int:
    """Run library/NAME on localhost through the `ansible` command (connection local, this
    Python as the interpreter) and save {module, args, status, seconds, result} to OUT."""
    env = dict(os.environ, ANSIBLE_LIBRARY=str(REPO / "library"), ANSIBLE_MODULE_UTILS=str(REPO / "module_utils"),
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    argv = [sys.executable, "-m", "ansible", "adhoc", "localhost", "-c", "local", "-i", "localhost,", "-m", name,
            "-e", f"ansible_python_interpreter={sys.executable}"]
    if json.loads(args_json):  # ("-a {}" is raw params to ansible)
        argv += ["-a", args_json]
    started = time.time()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO, check=False)
        text, err, rc = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, err, rc = exc.stdout or "", f"timed out after {timeout} s", 124
        text = text.decode() if isinstance(text, bytes) else text
    seconds = round(time.time() - started, 2)
    match = _RESULT.search(text)
    result, status = None, "NO_RESULT"
    if match:
        status = match.group(1)
        try:
            result = json.JSONDecoder().raw_decode(text[match.end():])[0]
        except ValueError:
            status = "UNPARSED"
    record = {"module": name, "args": json.loads(args_json), "status": status, "rc": rc,
              "started": round(started, 3), "seconds": seconds, "result": result}
    if result is None:
        record["stdout_tail"], record["stderr_tail"] = text[-4000:], err[-4000:]
    Path(out).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {status} in {seconds} s -> {out}")
    return 0


def wait_kv(log: str, seconds: float) -> int:
    """0 once LOG has the KV-cache line (the pool is allocated), 1 after SECONDS without it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if "KV Cache is allocated" in Path(log).read_text(errors="replace"):
                return 0
        except OSError:
            pass
        time.sleep(0.5)
    return 1


def _status(url: str, timeout: float = 5) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except Exception:  # refused, reset, timed out: not up yet
        return None


def wait_ready(out: str, seconds: float, specs: list[str]) -> int:
    """Poll each server's /health_generate until 200, at most SECONDS; write per server the
    launch time, the first 200, the seconds between, and when its log said 'fired up'."""
    servers = {}
    for spec in specs:
        name, rest = spec.split("=", 1)
        url, start_file, log = rest.split(",")
        servers[name] = {"url": url, "log": log, "start_file": start_file}
    deadline = time.monotonic() + seconds
    pending = set(servers)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            server = servers[name]
            if "started" not in server:
                try:
                    server["started"] = float(Path(server["start_file"]).read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue
            code = _status(server["url"].rstrip("/") + "/health_generate")
            server["last_code"] = code
            if code == 200:
                server["ready_at"] = round(time.time(), 3)
                server["seconds_to_ready"] = round(server["ready_at"] - server["started"], 1)
                pending.discard(name)
        time.sleep(0.5)
    for server in servers.values():
        try:
            for line in Path(server["log"]).read_text(errors="replace").splitlines():
                if "fired up and ready to roll" in line:
                    server["fired_up_line"] = line
                    break
        except OSError:
            pass
    Path(out).write_text(json.dumps(servers, indent=1, sort_keys=True) + "\n")
    print(json.dumps({n: s.get("seconds_to_ready") for n, s in servers.items()}))
    return 0 if not pending else 1


def get(url: str, out: str, timeout: float = 30) -> int:
    started = time.monotonic()
    meta = {"url": url}
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
            body, meta["code"] = response.read(), response.status
            meta["content_type"] = response.headers.get("Content-Type")
    except urllib.error.HTTPError as exc:
        body, meta["code"] = exc.read(), exc.code
    except Exception as exc:
        body, meta["error"] = b"", repr(exc)
    meta["seconds"] = round(time.monotonic() - started, 3)
    Path(out).write_bytes(body)
    Path(out + ".meta.json").write_text(json.dumps(meta, sort_keys=True) + "\n")
    print(f"GET {url}: {meta.get('code', meta.get('error'))} in {meta['seconds']} s")
    return 0


def split_bench(result_json: str, prefix: str) -> int:
    """PREFIX.stdout.txt and PREFIX.jsonl from an sglang_bench result's raw output."""
    result = (json.loads(Path(result_json).read_text()).get("result") or {})
    raw = result.get("raw") or {}
    Path(prefix + ".stdout.txt").write_text(raw.get("txt", ""))
    if raw.get("jsonl"):
        Path(prefix + ".jsonl").write_text(raw["jsonl"])
    record = result.get("record") or {}
    print(f"{prefix}: status {record.get('status')}, output_throughput {record.get('output_throughput')}")
    return 0


def engine_args(out: str, flags: list[str]) -> int:
    """module_utils/engine_args.py's scan of the installed sglang package for FLAGS: each public
    function named like scan, called with the package folder and the flags (by parameter name)."""
    import importlib
    import inspect

    import ansible.module_utils
    import sglang

    if str(REPO / "module_utils") not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(str(REPO / "module_utils"))
    mod = importlib.import_module("ansible.module_utils.engine_args")
    package = os.path.dirname(sglang.__file__)
    result: dict = {"package": package, "sglang": getattr(sglang, "__version__", None), "flags": flags,
                    "names": sorted(n for n in vars(mod) if not n.startswith("_"))}
    for name, func in sorted(vars(mod).items()):
        if name.startswith("_") or not callable(func) or "scan" not in name.lower() or inspect.isclass(func):
            continue
        kwargs = {}
        for param in inspect.signature(func).parameters.values():
            low = param.name.lower()
            if any(k in low for k in ("root", "path", "dir", "package", "source", "tree")):
                kwargs[param.name] = package
            elif any(k in low for k in ("flag", "field", "name", "arg")):
                kwargs[param.name] = flags
        try:
            result[name] = {"kwargs": sorted(kwargs), "value": func(**kwargs)}
        except Exception as exc:  # record and go on: the run must not stop here
            result[name] = {"kwargs": sorted(kwargs), "error": repr(exc)}
    Path(out).write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n")
    print(f"engine_args: {[n for n in result if n not in ('package', 'sglang', 'flags', 'names')]} -> {out}")
    return 0


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "make-model":
        make_model(args[0])
        return 0
    if command == "module":
        return run_module(args[0], args[1], args[2], float(args[3]) if len(args) > 3 else 600)
    if command == "wait-kv":
        return wait_kv(args[0], float(args[1]))
    if command == "wait-ready":
        return wait_ready(args[0], float(args[1]), args[2:])
    if command == "get":
        return get(args[0], args[1])
    if command == "engine-args":
        return engine_args(args[0], args[1:])
    if command == "split-bench":
        return split_bench(args[0], args[1])
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
