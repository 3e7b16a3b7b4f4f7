"""Nothing secret-named reaches a result file: run.json, the records and the log excerpts."""
import pathlib

from ansible.module_utils import bench_results as br
from ansible.module_utils import result_store as rs

KEY, ADMIN = "sk-results-key-9876", "sk-admin-5432"
# What real SGLang 0.5.10.post1 writes to its journal at startup (the engine's server_args line).
JOURNAL = ("2026-11-30T10:00:00+0000 host run_tp8.sh[42]: [2026-11-30 10:00:00] server_args=ServerArgs("
           f"model_path='m', host='0.0.0.0', port=30000, api_key='{KEY}', admin_api_key='{ADMIN}', "
           "ssl_keyfile_password=None)\n"
           "2026-11-30T10:00:05+0000 host run_tp8.sh[42]: [2026-11-30 10:00:05 TP0] Decode batch. "
           "#running-req: 1, #token: 64, token usage: 0.00, cuda graph: False, gen throughput (token/s): 9.00, "
           "#queue-req: 0\n")


def test_run_json_records_and_logs_hold_no_secret(tmp_path):
    store = rs.RunStore(tmp_path, "r1")
    store.write_run_json({"plan": {"concurrencies": [1]},
                          "profiles": {"baseline": {"model-path": "m", "admin-api-key": ADMIN}}})
    store.append_record(br.empty_record(host="h1", profile="baseline", max_concurrency=1, repeat=0,
                                        status="ok", server_args={"api_key": KEY, "port": 30000}))
    store.write_log("h1-baseline.log", JOURNAL)
    texts = {p.name: p.read_text() for p in pathlib.Path(tmp_path, "r1").rglob("*") if p.is_file()}
    assert set(texts) >= {"run.json", "records.jsonl", "h1-baseline.log"}
    for name, text in texts.items():
        assert KEY not in text and ADMIN not in text, name
    assert "api_key='********'" in texts["h1-baseline.log"]
    assert "#token: 64" in texts["h1-baseline.log"]  # the rest of the log as it was
    assert store.records()[0]["server_args"] == {"api_key": "********", "port": 30000}
    assert store.read_run_json()["profiles"]["baseline"] == {"model-path": "m", "admin-api-key": "********"}
