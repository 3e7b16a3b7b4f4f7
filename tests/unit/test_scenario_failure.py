"""When a molecule scenario fails, `make molecule` (and so `make test`) ends with why, in a few
lines (scripts/scenario-failure.py), after every scenario's whole output: CI keeps only a log's
tail. Read on a real failed scenario's output (tests/fixtures/molecule/: the bench scenario whose
verifier failed, 2026-12-03) and on a real ansible-playbook run's output framed as molecule frames
a step."""
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "scenario-failure.py"
VERIFY_FAILED = REPO / "tests" / "fixtures" / "molecule" / "molecule-bench-verify-failed.log"

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - block:
        - name: Provoke a failure on purpose
          ansible.builtin.fail: {msg: "the rescued failure"}
      rescue:
        - name: Rescue it
          ansible.builtin.debug: {msg: rescued}
    - name: Fail for real
      ansible.builtin.fail: {msg: "the scenario's real failure"}
"""


def digest(path):
    run = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True, text=True, check=True)
    return run.stdout


def test_a_failed_verifier_is_named_with_its_failed_tests_and_assertions(tmp_path):
    lines = VERIFY_FAILED.read_text().splitlines()
    assert "converge" in lines[0] and "Executing" in lines[0]
    # (a failure the converge step provoked on purpose and rescued: the converge passed)
    lines[1:1] = ["[  50s]   \x1b[2m│\x1b[0m TASK [Stop on a wrong flag]",
                  "[  50s]   \x1b[2m│\x1b[0m fatal: [sglpb-bench-1]: FAILED! => a failure on purpose"]
    log = tmp_path / "bench.log"
    log.write_text("\n".join(lines) + "\n")
    out = digest(log)
    assert "ERROR    bench ➜ verify: Executed: Failed" in out
    assert "FAILED tests/test_bench_results.py::test_tune_run_json_and_report" in out
    assert "E       assert 3 == 2" in out and "CRITICAL Verifier tests failed" in out
    assert "on purpose" not in out and "TASK [" not in out, out
    assert len(out.splitlines()) < 20


def test_the_failed_task_is_the_last_failure_of_the_failed_step_not_a_rescued_one(tmp_path):
    playbook = tmp_path / "converge.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="default", ANSIBLE_CALLBACK_RESULT_FORMAT="yaml",
               ANSIBLE_FORCE_COLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(playbook)],
                         capture_output=True, text=True, env=env, check=False)
    assert run.returncode == 2, run.stdout + run.stderr
    # (molecule's frame around a step, as in the real output: a clock, a box, its INFO/ERROR lines)
    framed = ["[  49s] \x1b[36mINFO    \x1b[0m \x1b[32mdefault\x1b[0m ➜ \x1b[33mprepare\x1b[0m: \x1b[36mExecuting\x1b[0m",
              "[  50s]   \x1b[2m│\x1b[0m fatal: [h]: FAILED! => a failure of another step",
              "[  51s] \x1b[36mINFO    \x1b[0m \x1b[32mdefault\x1b[0m ➜ \x1b[33mconverge\x1b[0m: \x1b[36mExecuting\x1b[0m"]
    framed += [f"[  52s]   \x1b[2m│\x1b[0m {line}" for line in run.stdout.splitlines()]
    framed += ["[  53s] \x1b[31mERROR   \x1b[0m \x1b[32mdefault\x1b[0m ➜ \x1b[33mconverge\x1b[0m: "
               "\x1b[31mExecuted: Failed\x1b[0m"]
    log = tmp_path / "default.log"
    log.write_text("\n".join(framed) + "\n")
    out = digest(log)
    assert "TASK [Fail for real]" in out and "the scenario's real failure" in out, out
    assert "rescued failure" not in out and "another step" not in out, out
    assert out.rstrip().endswith("ERROR    default ➜ converge: Executed: Failed"), out


def test_make_molecule_ends_with_why_each_failed_scenario_failed(tmp_path):
    # (a stand-in for molecule: the bench scenario's real output for one scenario, a pass for the other)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "molecule"
    fake.write_text(f"#!/bin/sh\n[ \"$3\" = broken{os.getpid()} ] && {{ cat {VERIFY_FAILED}; exit 1; }}\n"
                    "echo all good\n")
    fake.chmod(0o755)
    logs = tmp_path / "logs"
    names = [f"broken{os.getpid()}", f"fine{os.getpid()}"]
    run = subprocess.run(["make", "--no-print-directory", "-C", str(REPO), "-o", "venv", "-o", "image", "molecule",
                          "MOLECULE_NEEDS=", f"BIN={bin_dir}", f"MOLECULE_LOGS={logs}",
                          f"MOLECULE_SCENARIOS={' '.join(names)}"],
                         capture_output=True, text=True, check=False)
    assert run.returncode != 0
    tail = run.stdout[run.stdout.rindex(f"=== molecule {names[0]} failed"):]
    assert "FAILED tests/test_bench_results.py::test_tune_run_json_and_report" in tail, run.stdout
    assert f"=== molecule {names[1]}: passed" in run.stdout  # (the other one ran to its end)
    assert (logs / f"{names[0]}.failed").exists() and not (logs / f"{names[1]}.failed").exists()
    assert "all good" in (logs / f"{names[1]}.log").read_text()
