"""bench_store keeps the raw client output of a point private and without its keys: the real
clients' outputs (tests/fixtures) with a key, the admin key and the HF token put where a client
writes them - the 0.5.23 result line's embedded server_info, innocent names, a Bearer header in
the 0.5.11 client's argument echo - stored through the module as Ansible runs it."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import bench_store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY, ADMIN, HF, BEARER = "sk-raw-key-1123", "sk-raw-admin-5813", "hf_raw_token_2134", "sk-raw-bearer-5589"
JSONL = (FIXTURES / "bench" / "sglang-0.5.23-client.jsonl").read_text().replace(
    '"server_info": {', f'"server_info": {{"api_key": "{KEY}", "admin_api_key": "{ADMIN}", ', 1).replace(
    '"tag": null', f'"tag": "{HF}"', 1)
STDOUT = (FIXTURES / "real-sglang-0.5.11" / "bench-A-c8.stdout.txt").read_text().replace(
    "header=None", f"header=['Authorization: Bearer {BEARER}']").replace("tag=None", f"tag='{KEY}'")


def store(run_module, tmp_path, secret_values):
    point = {"max_concurrency": 4, "num_prompts": 20, "repeat": 0, "status": "planned", "last_repeat": True}
    record = {"host": "h1", "profile": "default", "run_id": "r1", "repeat": 0, "status": "ok", "max_concurrency": 4,
              "num_prompts": 20, "total_throughput": 3180.02}
    entry = {"point": point, "labels": {"host": "h1", "profile": "default", "run_id": "r1"},
             "run": {"record": record, "raw": {"jsonl": JSONL, "txt": STDOUT}, "started": 1.0, "finished": 2.0},
             "sweep": {"stop": False, "reason": None}}
    return run_module(bench_store, action="store", results_dir=str(tmp_path), run_id="r1", entries=[entry],
                      plateau_threshold=None, secret_values=secret_values)


def test_the_raw_output_is_stored_without_its_keys_and_private(run_module, tmp_path):
    # (a run directory an older release made: world-readable, tightened on the way)
    (tmp_path / "r1" / "raw").mkdir(parents=True)
    os.chmod(tmp_path / "r1", 0o755)
    os.chmod(tmp_path / "r1" / "raw", 0o755)
    got = store(run_module, tmp_path, [KEY, ADMIN, HF])
    assert got["rc_exit"] == 0, got
    raw = tmp_path / "r1" / "raw" / "h1" / "default"
    jsonl, txt = (raw / "c4-r0.jsonl").read_text(), (raw / "c4-r0.txt").read_text()
    for secret in (KEY, ADMIN, HF, BEARER):
        assert secret not in jsonl and secret not in txt, secret
    line = json.loads(jsonl)
    assert line["server_info"]["api_key"] == line["server_info"]["admin_api_key"] == line["tag"] == "********"
    assert line["total_throughput"] == json.loads(JSONL)["total_throughput"]
    assert "header=['Authorization: Bearer ********']" in txt and "tag='********'" in txt
    assert "Total token throughput (tok/s):          " in txt  # the rest as the client printed it
    for path in (raw / "c4-r0.jsonl", raw / "c4-r0.txt", tmp_path / "r1" / "records.jsonl"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    for folder in (tmp_path / "r1", tmp_path / "r1" / "raw", raw.parent, raw):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_without_the_known_values_only_what_names_and_bearer_mark_goes(run_module, tmp_path):
    """Why the playbooks pass the secrets' values (benchmark.yml's module_defaults): the HF token
    under an innocent name is found only by value."""
    assert store(run_module, tmp_path, [])["rc_exit"] == 0
    raw = tmp_path / "r1" / "raw" / "h1" / "default"
    jsonl, txt = (raw / "c4-r0.jsonl").read_text(), (raw / "c4-r0.txt").read_text()
    assert KEY not in jsonl and ADMIN not in jsonl and BEARER not in txt
    assert HF in jsonl and KEY in txt  # (the txt names no key: the jsonl's api_key is another file's)
