"""scripts/ansiballz-cache: the modules' payloads kept between playbook runs, never after their
sources changed (their contents, not their times); root's 0700 store only. The playbooks run with
the project venv's ansible-playbook, where the Makefile installs the hook."""
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "zipimport-cache"))
# (this checkout's file, not the copy the venv imports at start)
_spec = importlib.util.spec_from_file_location("ansiballz_cache_here",
                                               REPO / "scripts" / "ansiballz-cache" / "sglpb_ansiballz_cache.py")
cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cache)
# (its import hook is for ansible-playbook, not for this process)
sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, cache._AfterModuleCommon)]

VENV = REPO / ".venv" / "bin"
MODULE = """#!/usr/bin/python
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglpb_probe_util import VALUE

AnsibleModule(argument_spec={}).exit_json(changed=False, value=VALUE)
"""
PLAYBOOK = """- hosts: localhost
  gather_facts: false
  tasks:
    - sglpb_probe:
      register: probe
    - ansible.builtin.debug:
        msg: "probe says {{ probe.value }}"
"""


@pytest.fixture
def project(tmp_path):
    """A playbook, a module of its own and the module_utils file it imports."""
    (tmp_path / "library").mkdir()
    (tmp_path / "module_utils").mkdir()
    (tmp_path / "library" / "sglpb_probe.py").write_text(MODULE)
    (tmp_path / "module_utils" / "sglpb_probe_util.py").write_text('VALUE = "one"\n')
    (tmp_path / "site.yml").write_text(PLAYBOOK)
    (tmp_path / "ansible.cfg").write_text("[defaults]\nlibrary = ./library\nmodule_utils = ./module_utils\n")
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    return tmp_path, store


def play(folder, store):
    """ansible-playbook -vvvvv site.yml: (what the probe said, whether a payload was built: Ansible
    names at -vvvvv each module_utils file it puts into one)."""
    if subprocess.run([str(VENV / "python"), "-c", "import sglpb_ansiballz_cache"], check=False).returncode:
        pytest.fail("the project venv lacks scripts/ansiballz-cache: run `make venv`")
    env = {**os.environ, "ANSIBLE_CONFIG": str(folder / "ansible.cfg"), "SGLPB_ANSIBALLZ_CACHE": str(store),
           "ANSIBLE_NOCOLOR": "1"}
    out = subprocess.run([str(VENV / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-vvvvv",
                          "-e", f"ansible_python_interpreter={VENV / 'python'}", "site.yml"], cwd=folder,
                         env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    said = [line.split("probe says ")[1].strip('" ') for line in out.stdout.splitlines() if "probe says " in line]
    return said[0], "Including module_utils file ansible/module_utils/sglpb_probe_util.py" in out.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="the store is root's only")
def test_a_payload_is_built_once_and_never_after_its_module_utils_changed(project):
    folder, store = project
    assert play(folder, store) == ("one", True)
    kept = [p for p in store.rglob("ansible.legacy.sglpb_probe-*")]
    assert len(kept) == 1, sorted(store.rglob("*"))
    # the next run reads the kept payload: nothing is built
    assert play(folder, store) == ("one", False)
    # a changed module_utils file, of the same size and time: built again, and the new code runs
    util = folder / "module_utils" / "sglpb_probe_util.py"
    st = util.stat()
    util.write_text('VALUE = "two"\n')
    os.utime(util, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert play(folder, store) == ("two", True)
    assert len(list(store.rglob("ansible.legacy.sglpb_probe-*"))) == 2
    # a changed module: the same
    (folder / "library" / "sglpb_probe.py").write_text(MODULE.replace("value=VALUE", "value=VALUE + '!'"))
    assert play(folder, store) == ("two!", True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the store is root's only")
def test_a_store_others_can_write_is_not_used(project):
    folder, store = project
    store.chmod(0o777)
    assert play(folder, store) == ("one", True)
    assert play(folder, store) == ("one", True)
    assert not list(store.iterdir())


def test_the_signature_follows_the_sources(project):
    folder, _ = project

    class Constants:
        DEFAULT_MODULE_PATH = [str(folder / "library")]
        DEFAULT_MODULE_UTILS_PATH = [str(folder / "module_utils")]
        DEFAULT_ROLES_PATH = []
        COLLECTIONS_PATHS = [str(folder / "collections")]

    argv = ["ansible-playbook", str(folder / "site.yml")]
    first = cache.signature(Constants, argv)
    assert cache.signature(Constants, argv) == first
    util = folder / "module_utils" / "sglpb_probe_util.py"
    util.write_text('VALUE = "three"\n')
    assert cache.signature(Constants, argv) != first
    assert str(folder / "module_utils") in cache.source_folders(Constants, argv)
    # a collection installed with ansible-galaxy, then another version of it
    manifest = folder / "collections" / "ansible_collections" / "acme" / "gpu" / "MANIFEST.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"collection_info": {"version": "1.0.0"}}')
    installed = cache.signature(Constants, argv)
    manifest.write_text('{"collection_info": {"version": "1.0.1"}}')
    assert len({first, installed, cache.signature(Constants, argv)}) == 3
    # a copy elsewhere (another clone) has the same
    here = cache.signature(Constants, argv)
    copy = folder.parent / "clone"
    shutil.copytree(folder, copy)
    for attr in ("DEFAULT_MODULE_PATH", "DEFAULT_MODULE_UTILS_PATH", "COLLECTIONS_PATHS"):
        setattr(Constants, attr, [p.replace(str(folder), str(copy)) for p in getattr(Constants, attr)])
    assert cache.signature(Constants, ["ansible-playbook", str(copy / "site.yml")]) == here


def test_keep_stores_new_entries_and_drops_folders_unused_for_days(tmp_path, monkeypatch):
    store, run_cache = tmp_path / "store", tmp_path / "run"
    store.mkdir(mode=0o700)
    run_cache.mkdir()
    (run_cache / "ansible.legacy.x-ZIP_DEFLATED-none").write_bytes(b"payload")
    (run_cache / "ansible.legacy.x-ZIP_DEFLATED-none.lock").write_bytes(b"")
    (run_cache / "ansible.legacy.y-ZIP_DEFLATED-none-part").write_bytes(b"half")
    old, recent = store / "old-signature", store / "recent-signature"
    for folder, days in ((old, 4), (recent, 1)):
        folder.mkdir()
        stamp = time.time() - days * 24 * 3600
        os.utime(folder, (stamp, stamp))
    monkeypatch.setattr(cache, "STORE", str(store))
    cache.keep(str(run_cache), str(store / "this-signature"), os.getpid())
    assert sorted(p.name for p in (store / "this-signature").iterdir()) == ["ansible.legacy.x-ZIP_DEFLATED-none"]
    assert not old.exists() and recent.is_dir()
    # another process's exit (a forked worker's) keeps nothing
    (run_cache / "ansible.legacy.z-ZIP_DEFLATED-none").write_bytes(b"z")
    cache.keep(str(run_cache), str(store / "this-signature"), os.getpid() + 1)
    assert not (store / "this-signature" / "ansible.legacy.z-ZIP_DEFLATED-none").exists()
