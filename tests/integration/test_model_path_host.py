"""A local model-path the server's unit could not read is refused in deploy.yml's first play,
before anything changes, by the host check (the sglang_model_path module, module_utils/model_path.py)
run on this machine (connection local, as root): one host per case in one check-mode run of
deploy.yml's checks alone (--tags always: its first plays; the hosts that pass would go on to the
deploy play, a minute of CPU that checks nothing here).

The models lie under /srv (not under the clone, which may be under /tmp or /home: the unit has its
own /tmp, PrivateTmp=true, and hides /home, ProtectHome=true, and the controller check refuses a
model there). On this machine the sglang
user does not exist yet, as on a fresh host: the check reads the permission bits it will get;
the host that runs as nobody (an existing user) is checked as that user itself.
"""
import os
import shutil
import tempfile

import pytest
from harness import BASE_VARS, run_playbook, tasks_on

VALIDATION_PLAY = "Check the inputs and the GPUs before changing anything"
CHECK = "Check the service's user can read a local model-path"


@pytest.fixture(scope="module")
def models():
    """base/open/model (readable by all), base/closed/model (its parent 0700), base/noconf (no
    config.json): {name: path}."""
    os.makedirs("/srv", exist_ok=True)
    base = tempfile.mkdtemp(prefix="sglpb-test-model-path-", dir="/srv")
    paths = {}
    for name, parent_mode in (("open", 0o755), ("closed", 0o700)):
        model = f"{base}/{name}/model"
        os.makedirs(model)
        with open(f"{model}/config.json", "w") as f:
            f.write("{}")
        os.chmod(f"{base}/{name}", parent_mode)
        os.chmod(model, 0o755)
        os.chmod(f"{model}/config.json", 0o644)
        paths[name] = model
    os.makedirs(f"{base}/noconf")
    os.chmod(f"{base}/noconf", 0o755)  # (explicit: another test of the worker may have set a umask)
    paths["noconf"] = f"{base}/noconf"
    os.chmod(base, 0o755)
    yield paths
    shutil.rmtree(base)


def _args(path):
    return {**BASE_VARS["sglang_server_args"], "model-path": path}


@pytest.fixture(scope="module")
def run(models, tmp_path_factory):
    hosts = {
        "home": {"sglang_server_args": _args("/home/someone/GLM-5")},
        "closed": {"sglang_server_args": _args(models["closed"])},
        "closed-as-nobody": {"sglang_server_args": _args(models["closed"]), "sglang_user": "nobody",
                             "sglang_group": "nogroup"},
        "noconf": {"sglang_server_args": _args(models["noconf"])},
        "missing": {"sglang_server_args": {**_args(None), "model": models["open"] + "-gone"}},
        "open": {"sglang_server_args": _args(models["open"])},
        "hub-id": {"sglang_server_args": _args("org/model")},
    }
    for values in hosts.values():
        values["sglang_server_args"] = {k: v for k, v in values["sglang_server_args"].items() if v is not None}
    return run_playbook(tmp_path_factory.mktemp("model-path"), "deploy.yml", {}, check=True, hosts=hosts,
                        tags="always")


def _failure(run, host):
    failures = [f for f in run.failures if f.host == host]
    assert len(failures) == 1, run.explain()
    assert "Traceback" not in failures[0].text(), failures[0].text()
    # (in the checks' play, before the deploy's: nothing changed)
    assert failures[0].play == VALIDATION_PLAY, failures[0]
    return failures[0]


def test_a_model_under_home_is_refused_on_the_controller(run):
    failure = _failure(run, "home")
    assert failure.task == "Check the server settings", failure
    assert ("sglang_server_args.model-path /home/someone/GLM-5: the service cannot see /home (ProtectHome=true in "
            "the unit") in failure.text()


def test_a_model_in_a_folder_the_user_cannot_enter_is_refused_on_the_host(run, models):
    failure = _failure(run, "closed")
    assert failure.task == CHECK, failure
    parent = models["closed"].rsplit("/", 1)[0]
    assert (f"sglang_server_args.model-path {models['closed']}: the service's user sglang cannot enter {parent} "
            "(mode 0700, root:root): chmod o+x") in failure.text()
    assert "the user sglang does not exist yet" in failure.text()


def test_an_existing_user_is_checked_as_itself(run, models):
    failure = _failure(run, "closed-as-nobody")
    assert failure.task == CHECK and failure.result.get("checked_as") == "user", failure
    assert f"the service's user nobody cannot enter {models['closed'].rsplit('/', 1)[0]}" in failure.text()


def test_a_folder_without_config_json_and_a_missing_path_are_refused(run, models):
    assert "the folder holds no config.json" in _failure(run, "noconf").text()
    text = _failure(run, "missing").text()
    assert f"sglang_server_args.model {models['open']}-gone: no such file or folder on the host" in text


def test_a_readable_model_and_a_hub_id_pass_the_check(run):
    for host in ("open", "hub-id"):
        assert not [f for f in run.failures if f.host == host and f.play == VALIDATION_PLAY], run.explain()
        assert (VALIDATION_PLAY, CHECK) in tasks_on(run, host)
