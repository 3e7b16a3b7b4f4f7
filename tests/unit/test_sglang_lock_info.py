"""library/sglang_lock_info.py through its argument spec, on the role's real locks: the pins and
the `# sglang-lock:` fields as module_utils/sglang_lock.py reads them, and the wanted pins a lock
lacks, names compared as PEP 503 normalizes them; and its action plugin, which reads the lock on
the controller and leaves the text out of the result."""
import importlib.util
from pathlib import Path

import sglang_lock_info

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "roles" / "sglang" / "files" / "locks" / "sglang-0.5.10.post1-py3.11.txt"


def test_a_real_lock_its_pins_fields_and_what_it_lacks(run_module):
    got = run_module(sglang_lock_info, lock=str(LOCK), lock_text=LOCK.read_text(),
                     wanted=["sglang==0.5.10.post1", "torch==2.9.1", "FlashInfer_Python==0.6.8", "PyYAML==0.0.1"])
    assert got["rc_exit"] == 0 and got["changed"] is False, got
    assert got["pins"]["sglang"] == "0.5.10.post1" and got["pins"]["torch"] == "2.9.1"
    assert got["fields"]["python"] == "3.11", got["fields"]
    # (pinned at another version counts as lacking it; names as the lock writes them)
    assert got["unpinned"] == ["flashinfer-python==0.6.8", "pyyaml==0.0.1"]
    assert "pyyaml" in got["pins"]


def test_a_file_that_is_not_a_lock_is_named(run_module):
    got = run_module(sglang_lock_info, lock="/srv/notes.txt", lock_text="hello world\n", wanted=[])
    assert got["rc_exit"] == 1 and got["failed"]
    assert got["msg"].startswith("sglang_lock /srv/notes.txt is not a lock (scripts/sglang_lock.py makes them): line 1")


def test_a_requirement_that_is_not_one_version_is_one_the_lock_lacks(run_module):
    got = run_module(sglang_lock_info, lock=str(LOCK), lock_text=LOCK.read_text(),
                     wanted=["torch>=2.9", " torch==2.9.1 "])
    assert got["rc_exit"] == 0 and got["unpinned"] == ["torch>=2.9"], got


def test_the_action_plugin_reads_the_controllers_lock_and_drops_the_text(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location(
        "lock_info_action", REPO / "roles" / "sglang" / "action_plugins" / "sglang_lock_info.py")
    plugin = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plugin)
    sent = {}

    class Task:
        args = {"lock": str(LOCK), "wanted": ["torch==2.9.1"]}
        async_val = 0
        check_mode = False
        diff = False

    action = plugin.ActionModule.__new__(plugin.ActionModule)
    action._task = Task()
    action._find_needle = lambda kind, path: path

    def execute(module_name, module_args, task_vars):
        sent.update(module_args)
        return {"pins": {"torch": "2.9.1"}, "invocation": {"module_args": module_args}}

    action._execute_module = execute
    monkeypatch.setattr(plugin.ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    got = action.run(task_vars={})
    assert sent["lock_text"] == LOCK.read_text() and sent["wanted"] == ["torch==2.9.1"]
    assert got == {"pins": {"torch": "2.9.1"}}
    action._task.args = {"lock": str(tmp_path / "gone.txt")}
    got = action.run(task_vars={})
    assert got["failed"] and got["msg"].startswith(f"sglang_lock {tmp_path / 'gone.txt'} cannot be read on the controller")
