"""Lay the files scripts/real_gpu/run.sh brought back (part1.tar.gz, part2.tar.gz, part3.tar.gz,
unpacked into one folder) out as tests/fixtures/real-sglang-0.5.11/.

    python scripts/real_gpu/collect.py UNPACKED_DIR tests/fixtures/real-sglang-0.5.11

Files are copied as they came, except: the GPU's serial number, UUID and PDI are replaced as in
tests/fixtures/nvidia-smi/h200-1gpu (0000000000000, GPU-00000000-1111-2222-3333-444444444444,
0x0000000000000000); sglang_bench results keep their record and command line but not
raw.txt/raw.jsonl, which are the .stdout.txt/.jsonl files beside them; the endpoints'
.meta.json files (status code, seconds) are gathered into endpoints.json.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

ZERO_SERIAL = "0000000000000"
ZERO_UUID = "GPU-00000000-1111-2222-3333-444444444444"
ZERO_PDI = "0x0000000000000000"


def identities(src: Path) -> dict[str, str]:
    """The GPU's own serial, UUID and PDI, read from its nvidia-smi -q."""
    text = (src / "res-part1" / "smi-idle" / "smi_q.txt").read_text()
    found = {}
    for label, zero in (("Serial Number", ZERO_SERIAL), ("GPU UUID", ZERO_UUID), ("GPU PDI", ZERO_PDI)):
        match = re.search(rf"^\s+{label}\s+: (\S+)$", text, re.M)
        if match and match.group(1) != "N/A":
            found[match.group(1)] = zero
    return found


def copy(src: Path, dst: Path, replace: dict[str, str]) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    data = src.read_bytes()
    for old, new in replace.items():
        data = data.replace(old.encode(), new.encode())
    dst.write_bytes(data)


def bench_result(src: Path, dst: Path, replace: dict[str, str]) -> None:
    data = json.loads(src.read_text())
    raw = (data.get("result") or {}).get("raw")
    if isinstance(raw, dict):
        stem = dst.name[: -len(".json")]
        data["result"]["raw"] = {key: f"(see {stem}{'.stdout.txt' if key == 'txt' else '.jsonl'})" for key in raw}
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    for old, new in replace.items():
        text = text.replace(old, new)
    dst.write_text(text)


def main(src_dir: str, dst_dir: str) -> int:
    src, dst = Path(src_dir), Path(dst_dir)
    replace = identities(src)
    dst.mkdir(parents=True, exist_ok=True)
    p1, p2, p3 = src / "res-part1", src / "res-part2", src / "res-part3"
    plain = {
        p1 / "host.txt": "host.txt",
        p1 / "sgl_kernel_import.txt": "sgl_kernel_import.txt",
        p1 / "make_model.txt": "make_model.txt",
        p1 / "gpu_facts-idle.json": "gpu_facts-idle.json",
        p1 / "steps.log": "steps-part1.log",
        p2 / "steps.log": "steps-part2.log",
        p3 / "steps.log": "steps-part3.log",
        p2 / "timings.json": "timings.json",
        p3 / "timings.json": "timings-part3.json",
        p3 / "sched.txt": "sched-part3.txt",
        p2 / "gpu_facts-load.json": "gpu_facts-load.json",
        p2 / "telemetry.csv": "telemetry.csv",
        p2 / "ps.txt": "ps.txt",
        p2 / "engine_args.json": "engine_args.json",
    }
    for name in ("run_A.sh", "run_B.sh", "run_C.sh"):
        plain[p1 / name] = name
    for s in "ABC":
        plain[p2 / f"server_{s}.log"] = f"server_{s}.log"
        plain[p2 / f"sched-{s}.txt"] = f"sched-{s}.txt"
        plain[p2 / f"server_info-{s}.json"] = f"server_info-{s}.json"
        plain[p2 / f"{s}-server_info.before"] = f"{s}-server_info.json"
        plain[p2 / f"{s}-get_model_info.before"] = f"{s}-get_model_info.json"
        plain[p2 / f"{s}-v1_models.before"] = f"{s}-v1_models.json"
        plain[p2 / f"{s}-metrics.before"] = f"{s}-metrics.before.txt"
    for s in "AB":
        plain[p2 / f"{s}-metrics.after"] = f"{s}-metrics.after.txt"
        plain[p2 / f"{s}-server_info.after"] = f"{s}-server_info.after.json"
    for name in ("health-A-startup", "health-C-startup", "health-A-ready", "health-C-ready",
                 "log_info-A", "log_info-C", "telemetry-started", "telemetry-stopped", "telemetry-windows"):
        plain[p2 / f"{name}.json"] = f"{name}.json"
    for part in (p1, p2):
        folder = "smi-idle" if part is p1 else "smi-load"
        for path in sorted((part / folder).iterdir()):
            plain[path] = f"{folder}/{path.name}"
    for path, name in plain.items():
        if path.exists():
            copy(path, dst / name, replace)
        else:
            print(f"missing: {path}")
    for part in (p2, p3):
        for path in sorted(part.glob("*.json")):
            if path.name.startswith(("bench-", "ab-")):
                bench_result(path, dst / path.name, replace)
                for suffix in (".stdout.txt", ".jsonl"):
                    other = path.with_name(path.name[: -len(".json")] + suffix)
                    if other.exists():
                        copy(other, dst / other.name, replace)
    endpoints = {}
    for path in sorted(p2.glob("*.meta.json")):
        server, _, rest = path.name.partition("-")
        endpoints[f"{server} {rest.split('.')[0]} ({rest.split('.')[1]})"] = json.loads(path.read_text())
    (dst / "endpoints.json").write_text(json.dumps(endpoints, indent=1, sort_keys=True) + "\n")
    left = [p for p in dst.rglob("*") if p.is_file() and any(k.encode() in p.read_bytes() for k in replace)]
    if left:
        raise SystemExit(f"identities left in {left}")
    shutil.rmtree(dst / "__pycache__", ignore_errors=True)
    print(f"{dst}: {sum(1 for p in dst.rglob('*') if p.is_file())} files, "
          f"{sum(p.stat().st_size for p in dst.rglob('*') if p.is_file()) // 1024} KiB; replaced {sorted(replace.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
