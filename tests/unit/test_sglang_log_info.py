"""sglang_log_info: the module run in-process, as Ansible runs it."""
from pathlib import Path

import sglang_log_info

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-logs"


def test_ready_log(run_module):
    result = run_module(sglang_log_info, path=str(LOGS / "tp8-ready.log"))
    assert result["changed"] is False
    assert result["ready"] is True and result["failure_kind"] is None
    assert result["max_total_num_tokens"] == 495488
    assert result["max_running_requests"] == 2048
    assert result["context_len"] == 202752
    lines = (LOGS / "tp8-ready.log").read_text().splitlines()
    assert result["tail"] == lines[-40:]


def test_failed_journal_export_in_check_mode(run_module, tmp_path):
    journal = tmp_path / "journal.txt"
    journal.write_text("".join(f"Nov 29 09:00:{i % 60:02d} gpu-vm run_tp8.sh[4187]: {line}\n" for i, line in
                               enumerate((LOGS / "not-enough-memory.log").read_text().splitlines())))
    result = run_module(sglang_log_info, path=str(journal), lines_max=3, _ansible_check_mode=True)
    assert "failed" not in result
    assert result["ready"] is False
    assert result["failure_kind"] == "not_enough_memory"
    assert result["failure_line"].startswith("RuntimeError: Not enough memory.")
    assert len(result["tail"]) == 3
    assert result["tail"][-1].endswith("Received sigquit from a child process. It usually means the child failed.")


def test_unreadable_log_fails_naming_the_path(run_module, tmp_path):
    missing = tmp_path / "missing.log"
    result = run_module(sglang_log_info, path=str(missing))
    assert result["failed"] is True
    assert str(missing) in result["msg"]


def test_negative_lines_max_is_refused(run_module):
    result = run_module(sglang_log_info, path=str(LOGS / "oom.log"), lines_max=-1)
    assert result["failed"] is True and "lines_max" in result["msg"]


def test_a_caught_warning_traceback_before_ready_says_ready(run_module):
    """SGLang 0.5.11 logs the missing openai-harmony's ImportError with its traceback (WARNING)
    and starts: ready, no failure; the error is reported as caught."""
    result = run_module(sglang_log_info, path=str(LOGS / "caught-warning-traceback.log"))
    assert "failed" not in result
    assert result["ready"] is True
    assert result["failure_kind"] is None and result["failure_line"] is None
    assert result["caught_errors"] == ["ModuleNotFoundError: No module named 'openai_harmony'"]


def test_a_log_that_ends_on_a_traceback_is_a_failure(run_module, tmp_path):
    lines = (LOGS / "caught-warning-traceback.log").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("ModuleNotFoundError"))
    log = tmp_path / "died.log"
    log.write_text("".join(lines[:cut + 2]))  # the server died right after it
    result = run_module(sglang_log_info, path=str(log))
    assert result["ready"] is False
    assert result["failure_kind"] == "traceback"
    assert result["failure_line"] == "ModuleNotFoundError: No module named 'openai_harmony'"
