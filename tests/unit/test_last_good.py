"""module_utils/last_good.py: keep a configuration and a venv, restore them, idempotently."""
import os

import pytest
from ansible.module_utils.last_good import LastGoodError, restore, save


def make_venv(root, dists):
    site = root / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(site):
        os.rmdir(site / name)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
    return str(root)


def test_save_restore_round_trip(tmp_path):
    script, env, extra = tmp_path / "run_tp8.sh", tmp_path / "sglang.env", tmp_path / "secret-args.yaml"
    script.write_text("good\n")
    env.write_text("KEY=1\n")
    env.chmod(0o600)
    venv = make_venv(tmp_path / "venv", ["sglang-0.5.10"])
    store = str(tmp_path / "store")
    files = [str(script), str(env), str(extra)]
    assert save(store, files, venv)["changed"] is True
    assert save(store, files, venv) == {"changed": False, "files": [], "venv": False}  # a second run: no change
    assert os.path.isdir(venv + ".last-good") and oct(os.stat(store).st_mode & 0o777) == "0o700"
    # A bad configuration: another script, a looser env file, a new file, another venv.
    script.write_text("bad\n")
    env.chmod(0o644)
    extra.write_text("x: 1\n")
    make_venv(tmp_path / "venv", ["sglang-0.5.11"])
    assert restore(store, check=True)["changed"] is True and script.read_text() == "bad\n"
    done = restore(store)
    assert done["changed"] and sorted(done["files"]) == sorted(files) and done["venv"] is True
    assert script.read_text() == "good\n" and oct(env.stat().st_mode & 0o777) == "0o600" and not extra.exists()
    assert os.listdir(tmp_path / "venv" / "lib" / "python3.11" / "site-packages") == ["sglang-0.5.10.dist-info"]
    assert restore(store)["changed"] is False


def test_restore_without_a_saved_configuration_says_what_to_do(tmp_path):
    with pytest.raises(LastGoodError, match="no last good configuration on this host"):
        restore(str(tmp_path / "store"))
