"""plugins/action/bench_store.py: action=store without `entries` reads the
point of every host of the play from the hosts' own facts (tasks/point.yml's point fact and
sglang_bench's result), as the Jinja loop over hostvars it replaced did."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("bench_store_action",
                                              REPO / "plugins" / "action" / "bench_store.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)


def entry(host):
    return {"point": {"max_concurrency": 8, "repeat": 0}, "sweep": {"stop": False, "reason": None}, "trial": None,
            "labels": {"host": host, "profile": "default", "run_id": "r", "standin": True}}


def test_each_host_that_noted_a_point_is_an_entry_with_its_client_s_result():
    hostvars = {
        "ran": {"_sglang_benchmark_point_entry": entry("ran"),
                "_sglang_benchmark_run": {"record": {"status": "ok"}, "raw": {"txt": "out"}, "started": 1.0,
                                          "finished": 2.0, "window": {"start": 1.2, "end": 1.9}, "changed": True}},
        # (its client's task was skipped: over capacity, or the sweep had stopped)
        "skipped": {"_sglang_benchmark_point_entry": entry("skipped"),
                    "_sglang_benchmark_run": {"skipped": True, "changed": False}},
        "done": {"_sglang_benchmark_point_entry": None},  # (its plan ran out of points)
        "other_play": {"_sglang_benchmark_point_entry": entry("other_play")},
    }
    entries = plugin.play_entries({"hostvars": hostvars, "ansible_play_hosts": ["ran", "skipped", "done"]})
    assert [e["labels"]["host"] for e in entries] == ["ran", "skipped"]
    assert entries[0]["run"] == {"record": {"status": "ok"}, "raw": {"txt": "out"}, "started": 1.0, "finished": 2.0,
                                 "window": {"start": 1.2, "end": 1.9}}
    assert entries[1]["run"] == {"record": None, "raw": None, "started": None, "finished": None, "window": None}
    assert entries[0]["point"] == {"max_concurrency": 8, "repeat": 0} and entries[0]["sweep"]["stop"] is False


def test_the_telemetry_call_reads_every_host_that_swept_the_profile():
    journal = {"stdout": "log of a", "changed": False}
    hostvars = {
        "a": {"_sglang_benchmark_swept": "r/tuned", "_sglang_benchmark_journal": journal,
              "_sglang_benchmark_gpu": {"windows": [{"host": "a", "max_concurrency": 8, "gpu": {}}]}},
        # (no journalctl on the host: its reason is the excerpt; telemetry off: no windows)
        "b": {"_sglang_benchmark_swept": "r/tuned",
              "_sglang_benchmark_journal": {"stdout": "", "reason": "journalctl is not installed"},
              "_sglang_benchmark_gpu": {"skipped": True}},
        "other_profile": {"_sglang_benchmark_swept": "r/baseline", "_sglang_benchmark_journal": journal},
        "before_the_sweep": {"_sglang_benchmark_journal": journal},  # (failed before it swept)
        "no_log_yet": {"_sglang_benchmark_swept": "r/tuned"},
    }
    task_vars = {"hostvars": hostvars,
                 "ansible_play_hosts_all": ["a", "b", "other_profile", "before_the_sweep", "no_log_yet", "gone"]}
    windows, logs = plugin.play_telemetry(task_vars, "r", "tuned")
    assert windows == [{"host": "a", "max_concurrency": 8, "gpu": {}}]
    assert logs == {"a-tuned.log": "log of a", "b-tuned.log": "(no server log excerpt: journalctl is not installed)"}
