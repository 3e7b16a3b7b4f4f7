"""deploy.yml's check of the SGLang venv's lock (roles/sglang validate.yml, sglang_lock_info), run
on this machine with real SGLang as the engine, through deploy.yml's checks alone (--tags always,
check mode): the role's own lock of the release and this Python fits and passes; a lock made for
another Python is refused naming both Pythons and how to make the right one. (A lock that lacks an
extra package: tests/integration/test_bad_input.py.)"""
import sys

from harness import REPO, run_playbook, tasks_on

VALIDATION_PLAY = "Check the inputs and the GPUs before changing anything"
CHECK = "Check the lock is of this release, Python, extras and extra packages"
LOCKS = REPO / "roles" / "sglang" / "files" / "locks"
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHER = "3.12" if PYTHON != "3.12" else "3.11"
RELEASE = {"sglang_engine": "sglang", "sglang_version": "0.5.10.post1", "cuda_toolkit_version": "12.8",
           "sglang_python": sys.executable}


def test_the_releases_lock_fits_and_a_lock_of_another_python_is_refused(tmp_path):
    run = run_playbook(tmp_path, "deploy.yml", {}, check=True, tags="always", hosts={
        "fits": RELEASE,
        "other-python": {**RELEASE, "sglang_lock": str(LOCKS / f"sglang-0.5.10.post1-py{OTHER}.txt")}})
    assert not [f for f in run.failures if f.host == "fits"], run.explain()
    assert (VALIDATION_PLAY, CHECK) in tasks_on(run, "fits"), run.explain()
    failures = [f for f in run.failures if f.host == "other-python"]
    assert len(failures) == 1 and failures[0].task == CHECK, run.explain()
    text = failures[0].text()
    assert f"sglang-0.5.10.post1-py{OTHER}.txt does not fit this install: it was made for Python {OTHER}" in text, text
    assert f"the venv is Python {PYTHON} with sglang_extras" in text and "make lock-0.5.10.post1" in text, text
