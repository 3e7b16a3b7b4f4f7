"""module_utils/model_path.py and the sglang_model_path module: a local model-path the unit's
sandbox hides, or its user cannot read, is refused naming the variable, the path and the fix; a
hub id is no local path."""
import os
import pwd

import pytest
import sglang_model_path
from ansible.module_utils.model_path import (
    bits_access,
    hidden_by,
    model_path_arg,
    readability_problem,
    sandbox_problem,
)
from ansible.module_utils.server_inputs import check_server_inputs

GOOD = {"args": {"model-path": "org/m", "tp-size": 8}, "profiles": {"tuned": {"max-running-requests": 2048}},
        "env": {}, "secrets": {}, "health_timeout": 1800, "health_interval": 0.5, "auto_request_tokens": 256}


@pytest.mark.parametrize(("path", "hidden"), [
    ("/home/me/GLM", ("/home", "ProtectHome=true")),
    ("/home", ("/home", "ProtectHome=true")),
    ("/root/models/x", ("/root", "ProtectHome=true")),
    ("/run/user/1000/m", ("/run/user", "ProtectHome=true")),
    ("/tmp/m", ("/tmp", "PrivateTmp=true")),
    ("/var/tmp/m", ("/var/tmp", "PrivateTmp=true")),
    ("/srv/../home/me/m", ("/home", "ProtectHome=true")),  # (normalised first)
    ("//home/me/m", ("/home", "ProtectHome=true")),
    ("/homework/m", None),
    ("/srv/models/GLM", None),
    ("/opt/sglang/hf/hub/models--org--m/snapshots/abc", None),
    ("/run/users/m", None),
])
def test_the_folders_the_sandbox_hides(path, hidden):
    assert hidden_by(path) == hidden


def test_a_path_under_home_is_refused_naming_the_variable_the_setting_and_the_fix():
    message = sandbox_problem("sglang_server_args.model-path", "/home/me/GLM")
    assert message.startswith("sglang_server_args.model-path /home/me/GLM: the service cannot see /home "
                              "(ProtectHome=true in the unit")
    assert "move the model under /srv or /opt" in message
    assert "Hugging Face id" in message
    assert sandbox_problem("sglang_server_args.model-path", "/tmp/GLM").startswith(
        "sglang_server_args.model-path /tmp/GLM: the service has its own empty /tmp (PrivateTmp=true")
    assert sandbox_problem("sglang_server_args.model-path", "/srv/GLM") is None


def test_a_link_into_home_is_named_with_where_it_leads():
    message = sandbox_problem("sglang_server_args.model-path", "/srv/GLM", resolved="/home/me/GLM")
    assert message.startswith("sglang_server_args.model-path /srv/GLM (a link to /home/me/GLM): the service "
                              "cannot see /home")


@pytest.mark.parametrize(("args", "overlay", "profile", "expected"), [
    ({"model-path": "/srv/m"}, None, None, ("/srv/m", "sglang_server_args.model-path")),
    ({"model": "/srv/m"}, None, None, ("/srv/m", "sglang_server_args.model")),
    ({"model-path": "/srv/m"}, {"model": "/home/x"}, "tuned", ("/home/x", "sglang_server_profiles.tuned.model")),
    ({"model-path": "/srv/m"}, {"max-running-requests": 8}, "tuned", ("/srv/m", "sglang_server_args.model-path")),
    ({}, None, None, (None, "sglang_server_args.model-path")),
])
def test_the_model_path_as_it_will_run(args, overlay, profile, expected):
    assert model_path_arg(args, overlay, profile) == expected


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"args": {"model-path": "/home/me/GLM"}}, "sglang_server_args.model-path /home/me/GLM: the service cannot see "
                                               "/home (ProtectHome=true"),
    ({"args": {"model": "/root/GLM"}}, "sglang_server_args.model /root/GLM: the service cannot see /root"),
    ({"args": {"model-path": "org/m"}, "profiles": {"tuned": {"model-path": "/run/user/0/m"}}, "profile": "tuned"},
     "sglang_server_profiles.tuned.model-path /run/user/0/m: the service cannot see /run/user"),
    ({"args": {"model-path": "/var/tmp/GLM"}}, "the service has its own empty /var/tmp (PrivateTmp=true"),
])
def test_the_controller_check_refuses_a_hidden_model_path(changes, fragment):
    problems = check_server_inputs(**{**GOOD, **changes})
    assert [p for p in problems if fragment in p], problems


@pytest.mark.parametrize("model", ["org/m", "home/me/GLM", "/srv/models/GLM", "/opt/m"])
def test_the_controller_check_passes_hub_ids_and_visible_paths(model):
    assert check_server_inputs(**{**GOOD, "args": {"model-path": model}}) == []


def _tree(tmp_path):
    """tmp_path/srv/model (config.json in it), all readable by others; returns the model's folder."""
    model = tmp_path / "srv" / "model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    for path in (tmp_path, tmp_path / "srv", model):
        path.chmod(0o755)
    (model / "config.json").chmod(0o644)
    return model


def _problem(path, can):
    return readability_problem("sglang_server_args.model-path", str(path), "sglang", "sglang", can)


def test_a_readable_model_passes(open_dir):
    model = _tree(open_dir)
    for parent in model.parents:
        if not os.stat(parent).st_mode & 0o001:
            pytest.skip(f"{parent} is not enterable by others here")
    assert _problem(model, bits_access(None, set())) is None
    model.chmod(0o750)
    assert "cannot list or enter the model's folder" in _problem(model, bits_access(None, set()))


def test_each_unreadable_step_is_named_with_its_fix(tmp_path):
    model = _tree(tmp_path)
    others = set()
    can = bits_access(None, others)
    blocked = {str(tmp_path / "srv")}

    def can_but_srv(path, mode):  # (the folders above tmp_path are not this test's)
        if path in blocked:
            return can(path, mode)
        return path not in (str(model), str(model / "config.json")) or can(path, mode)

    (tmp_path / "srv").chmod(0o750)
    message = _problem(model, can_but_srv)
    assert message.startswith(f"sglang_server_args.model-path {model}: the service's user sglang cannot enter "
                              f"{tmp_path / 'srv'} (mode 0750")
    assert f"chmod o+x {tmp_path / 'srv'}" in message

    (tmp_path / "srv").chmod(0o755)
    model.chmod(0o700)
    message = _problem(model, can_but_srv)
    assert "cannot list or enter the model's folder (mode 0700" in message
    assert f"chgrp -R sglang {model} && chmod -R g+rX {model}" in message

    model.chmod(0o755)
    (model / "config.json").chmod(0o600)
    assert f"cannot read {model / 'config.json'} (mode 0600" in _problem(model, can_but_srv)


def test_a_missing_model_and_a_folder_without_config_json(tmp_path):
    model = _tree(tmp_path)
    yes = lambda path, mode: True  # noqa: E731
    assert "no such file or folder on the host: copy the model there first" in _problem(tmp_path / "nope", yes)
    (model / "config.json").unlink()
    assert "the folder holds no config.json, which SGLang reads first" in _problem(model, yes)
    weights = tmp_path / "srv" / "m.gguf"
    weights.write_text("")
    assert _problem(weights, yes) is None
    assert "cannot read it" in _problem(weights, lambda path, mode: path != str(weights))


def test_bits_access_reads_owner_group_and_others(tmp_path):
    path = tmp_path / "f"
    path.write_text("")
    os.chmod(path, 0o640)
    st = os.stat(path)
    assert bits_access(st.st_uid, set())(str(path), os.R_OK)
    assert not bits_access(st.st_uid, set())(str(path), os.X_OK)
    assert bits_access(None, {st.st_gid})(str(path), os.R_OK)
    assert not bits_access(None, set())(str(path), os.R_OK)
    assert not bits_access(None, set())(str(tmp_path / "missing"), os.R_OK)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="becoming another user needs root")


def _module_args(path, user="nobody", working_dir="/nonexistent"):
    group = "nogroup" if user == "nobody" else user
    return {"args": {"model-path": path}, "user": user, "group": group, "working_dir": working_dir}


@pytest.fixture
def open_dir():
    """A folder every user can enter (pytest's tmp_path lies in folders of mode 0700), removed after."""
    import shutil
    import tempfile
    base = tempfile.mkdtemp(prefix="sglpb-model-path-", dir="/srv" if os.access("/srv", os.W_OK) else None)
    os.chmod(base, 0o755)
    from pathlib import Path
    yield Path(base)
    shutil.rmtree(base)


@needs_root
def test_the_module_checks_as_the_user_itself(run_module, open_dir):
    """As root the module becomes the user (nobody here): a folder only root enters is refused,
    one nobody can read passes; what exists is root's view."""
    pwd.getpwnam("nobody")
    model = _tree(open_dir)
    if not all(os.stat(p).st_mode & 0o001 for p in model.parents):
        pytest.skip(f"{open_dir} lies in a folder others cannot enter")
    result = run_module(sglang_model_path, **_module_args(str(model)))
    assert result["rc_exit"] == 0 and result["local"] and result["checked_as"] == "user", result
    (open_dir / "srv").chmod(0o700)
    result = run_module(sglang_model_path, **_module_args(str(model)))
    assert result["rc_exit"] == 1 and result["checked_as"] == "user", result
    assert result["msg"].startswith(f"sglang_server_args.model-path {model}: the service's user nobody cannot "
                                    f"enter {open_dir / 'srv'} (mode 0700, root:root)"), result
    (open_dir / "srv").chmod(0o755)
    (model / "config.json").chmod(0o600)
    result = run_module(sglang_model_path, **_module_args(str(model)))
    assert result["rc_exit"] == 1 and f"cannot read {model / 'config.json'}" in result["msg"], result


def test_the_module_passes_a_hub_id_and_refuses_a_link_into_home(run_module, tmp_path):
    result = run_module(sglang_model_path, **_module_args("org/name", working_dir=str(tmp_path)))
    assert result["rc_exit"] == 0 and result["local"] is False, result
    # (a relative path that exists under the unit's WorkingDirectory is a local one)
    (tmp_path / "org").mkdir()
    (tmp_path / "org" / "name").symlink_to("/home/someone/GLM")
    result = run_module(sglang_model_path, **_module_args("org/name", working_dir=str(tmp_path)))
    assert result["rc_exit"] == 1 and result["local"] is True, result
    assert result["msg"].startswith("sglang_server_args.model-path org/name (a link to /home/someone/GLM): the "
                                    "service cannot see /home"), result


def test_the_module_judges_a_user_that_does_not_exist_yet_by_the_bits(run_module, open_dir):
    model = _tree(open_dir)
    (model / "config.json").chmod(0o600)
    result = run_module(sglang_model_path, **_module_args(str(model), user="sglpb-no-such-user"))
    assert result["rc_exit"] == 1 and result["checked_as"] == "bits", result
    assert "does not exist yet: checked by the permission bits" in result["msg"]
