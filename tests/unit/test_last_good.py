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


def deployed(tmp_path, key, script="good\n", secret_args=True):
    """A host's configuration as the server role renders it: the launch script (with --config when
    there are secret args), the 0600 env file (HF_TOKEN) and the 0640 secret args file (the key)."""
    files = {"script": tmp_path / "run_tp8.sh", "env": tmp_path / "sglang.env", "args": tmp_path / "secret-args.yaml",
             "unit": tmp_path / "sglang.service"}
    files["script"].write_text(script + (f"  --config {files['args']}\n" if secret_args else ""))
    files["env"].write_text('HF_TOKEN="hf_token_then"\n')
    files["env"].chmod(0o600)
    if secret_args:
        files["args"].write_text(f'api-key: "{key}"\n')
        files["args"].chmod(0o640)
    elif files["args"].exists():
        files["args"].unlink()
    files["unit"].write_text("[Service]\n")
    return files


def test_a_rollback_restores_the_args_and_script_but_keeps_the_rotated_key(tmp_path):
    f = deployed(tmp_path, "sk-old-key-1111")
    store = tmp_path / "store"
    paths = [str(p) for p in f.values()]
    secrets = [str(f["env"]), str(f["args"])]
    assert save(str(store), paths, None, secrets=secrets)["changed"] is True
    # No key, no token, no copy of a secret file in the store: only whether each existed.
    kept_text = "".join(p.read_text() for p in store.iterdir())
    assert "sk-old-key-1111" not in kept_text and "hf_token_then" not in kept_text
    copies = sorted(n.split("-", 1)[1] for n in os.listdir(store) if n != "manifest.json")
    assert copies == ["run_tp8.sh", "sglang.service"]
    # A rotation of the key and the token and a bad args change in one deploy, whose start failed:
    f["script"].write_text(f"bad --max-running-requests 999999\n  --config {f['args']}\n")
    f["args"].write_text('api-key: "sk-rotated-2222"\n')
    f["env"].write_text('HF_TOKEN="hf_token_now"\n')
    done = restore(str(store), secrets=secrets)
    assert done["files"] == [str(f["script"])] and sorted(done["kept"]) == sorted(secrets)
    assert f["script"].read_text() == f"good\n  --config {f['args']}\n"
    assert f["args"].read_text() == 'api-key: "sk-rotated-2222"\n'  # the rotated key stays
    assert f["env"].read_text() == 'HF_TOKEN="hf_token_now"\n'
    assert restore(str(store), secrets=secrets)["changed"] is False
    # Rotating the key again changes nothing kept: a deploy with only a new key saves nothing new.
    f["args"].write_text('api-key: "sk-rotated-3333"\n')
    assert save(str(store), paths, None, secrets=secrets)["changed"] is False


def test_a_rollback_that_would_drop_the_key_is_refused_before_anything_changes(tmp_path):
    f = deployed(tmp_path, "", secret_args=False)  # the last good start had no key (no --config)
    store = str(tmp_path / "store")
    paths, secrets = [str(p) for p in f.values()], [str(f["env"]), str(f["args"])]
    save(store, paths, None, secrets=secrets)
    f = deployed(tmp_path, "sk-new-key-4444", script="bad\n")  # then a key was set, and the start failed
    with pytest.raises(LastGoodError, match=r"secret-args.yaml holds secrets .* was absent in the last good "
                                            r"configuration .* present now, so the restored launch script would "
                                            r"start the server without its API key\. Nothing was changed"):
        restore(store, secrets=secrets)
    assert f["script"].read_text().startswith("bad\n") and f["args"].read_text() == 'api-key: "sk-new-key-4444"\n'


def test_an_older_store_with_copies_of_the_secret_files_loses_them_and_they_are_not_restored(tmp_path):
    f = deployed(tmp_path, "sk-old-key-5555")
    store = tmp_path / "store"
    paths, secrets = [str(p) for p in f.values()], [str(f["env"]), str(f["args"])]
    save(str(store), paths, None)  # as before: every file copied, the key among them
    assert "sk-old-key-5555" in "".join(p.read_text() for p in store.iterdir())
    f["args"].write_text('api-key: "sk-rotated-6666"\n')
    f["script"].write_text("bad\n")
    done = restore(str(store), secrets=secrets)
    assert f["args"].read_text() == 'api-key: "sk-rotated-6666"\n' and f["script"].read_text().startswith("good")
    assert str(f["args"]) in done["kept"]
    assert "sk-old-key-5555" not in "".join(p.read_text() for p in store.iterdir())


def test_the_module_keeps_and_restores_with_its_secrets_option(tmp_path, run_module):
    import sglang_last_good

    f = deployed(tmp_path, "sk-old-key-7777")
    store = str(tmp_path / "store")
    files, secrets = [str(p) for p in f.values()], [str(f["env"]), str(f["args"])]
    assert run_module(sglang_last_good, state="saved", store=store, files=files, secrets=secrets)["changed"] is True
    f["args"].write_text('api-key: "sk-rotated-8888"\n')
    f["script"].write_text("bad\n")
    got = run_module(sglang_last_good, state="restored", store=store, secrets=secrets)
    assert got["rc_exit"] == 0 and got["files"] == [str(f["script"])] and sorted(got["kept"]) == sorted(secrets)
    assert f["args"].read_text() == 'api-key: "sk-rotated-8888"\n'
