"""The modules Ansible builds for its tasks (AnsiballZ), kept between playbook runs, for the test
machines only.

Before a module first runs in a playbook run, ansible-playbook builds its payload: it parses the
module and every module_utils file it imports, recursively, to find what goes into the zip
(ansible/executor/module_common.py recursive_finder), about 0.1-0.45 s of CPU a module. It keeps
the result in a cache that lives as long as the run (a folder under its own temporary folder), so
every playbook run builds every module it uses again: the tests run hundreds of short playbook
runs, and a check-mode deploy.yml spent 4.8 s of its 32 s of CPU there (0.2 s with this).

This keeps that cache between runs. Ansible names an entry by the module's name only, so the
entries are kept in a folder named by a signature of everything a payload is built from: Python's
and Ansible's versions, the installed distributions (their dist-info names: what pip installed,
Ansible's own modules and collections among it), the contents of every file in the module and
module_utils paths Ansible is configured with, in the roles' library and module_utils folders and
beside the playbooks on the command line, in that order (this repository's: about 1 MB, hashed in
a few milliseconds), and the MANIFEST.json of each collection in Ansible's collections paths. Not
where they lie: a payload holds no path, so two clones of the repository share their payloads. A
changed module or module_utils file changes the signature, so a payload is never reused after its
sources changed. At the start of a run the entries of its signature's folder are copied into the
run's cache; at its end the entries the run built are copied back.

Installed by the Makefile into the project's venv beside the zipimport byte-code cache (a .pth
file imports this module; it acts only when ansible.executor.module_common is imported, in
ansible-playbook's main process before it forks its workers); never on a host the product deploys
to. Root's processes only, in a folder of root's of mode 0700 that is not used if anyone else
could write it (Ansible's entries are pickles). The entries hold module code, never a task's
arguments (Ansible adds those after the cache).
"""
import atexit
import glob
import hashlib
import importlib.abc
import importlib.machinery
import os
import shutil
import sys

from sglpb_zipimport_cache import cache_is_roots

STORE = os.environ.get("SGLPB_ANSIBALLZ_CACHE", "/var/cache/sglpb-ansiballz")
MODULE_COMMON = "ansible.executor.module_common"
# (a signature's folder not used for this long is removed: each change of the sources makes a new one)
KEEP_UNUSED_S = 3 * 24 * 3600


def _add_file(digest, path, name):
    """Add a file's name and contents to digest."""
    try:
        with open(path, "rb") as f:
            digest.update(f"{name}\0".encode() + hashlib.sha256(f.read()).digest())
    except OSError:
        pass


def _add_tree(digest, top):
    """Add each file under top (its path below top and its contents) to digest."""
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            _add_file(digest, path, os.path.relpath(path, top))


def source_folders(constants, argv):
    """The folders a module or module_utils file of this run can come from (existing ones)."""
    folders = [*(constants.DEFAULT_MODULE_PATH or []), *(constants.DEFAULT_MODULE_UTILS_PATH or [])]
    roles = [*(constants.DEFAULT_ROLES_PATH or [])]
    for arg in argv[1:]:
        if arg.endswith((".yml", ".yaml")) and os.path.isfile(arg):
            beside = os.path.dirname(os.path.abspath(arg))
            folders += [os.path.join(beside, "library"), os.path.join(beside, "module_utils")]
            roles.append(os.path.join(beside, "roles"))
    for top in roles:
        if os.path.isdir(top):
            for role in sorted(os.listdir(top)):
                folders += [os.path.join(top, role, "library"), os.path.join(top, role, "module_utils")]
    return [f for f in dict.fromkeys(os.path.abspath(f) for f in folders) if os.path.isdir(f)]


def signature(constants, argv):
    """The name of the store's folder for this run: a hash of what its payloads are built from."""
    import ansible

    digest = hashlib.sha256(f"{sys.version}\0{ansible.__file__}\0{ansible.__version__}\n".encode())
    site = os.path.dirname(os.path.dirname(ansible.__file__))
    digest.update("\0".join(sorted(n for n in os.listdir(site) if n.endswith(".dist-info"))).encode())
    # (in their order, which decides which of two files of one name a module gets; by their
    # contents, not where they lie: a payload holds no path, so clones of the repository share it)
    for folder in source_folders(constants, argv):
        digest.update(f"folder {os.path.basename(folder)}\n".encode())
        _add_tree(digest, folder)
    # collections installed outside pip (ansible-galaxy): each one's MANIFEST.json holds the
    # checksum of its file list, which holds each file's
    for top in constants.COLLECTIONS_PATHS or []:
        for manifest in sorted(glob.glob(os.path.join(top, "ansible_collections", "*", "*", "MANIFEST.json"))):
            _add_file(digest, manifest, os.path.relpath(manifest, top))
    return digest.hexdigest()[:32]


def _entries(folder):
    """Ansible's finished cache entries in folder (not its locks or half-written files)."""
    return [n for n in os.listdir(folder) if not n.startswith(".") and not n.endswith((".lock", "-part"))]


def seed():
    """Copy the stored entries of this run's signature into the run's cache; keep the new ones at exit."""
    if os.geteuid() != 0 or not cache_is_roots(STORE):
        return
    from ansible import constants

    run_cache = os.path.join(constants.DEFAULT_LOCAL_TMP, "ansiballz_cache")
    stored = os.path.join(STORE, signature(constants, sys.argv))
    os.makedirs(run_cache, exist_ok=True)
    if os.path.isdir(stored):
        os.utime(stored)
        for name in _entries(stored):
            try:
                shutil.copyfile(os.path.join(stored, name), os.path.join(run_cache, name))
            except OSError:
                pass
    # (atexit runs last-in first-out: this runs before Ansible removes its temporary folder)
    atexit.register(keep, run_cache, stored, os.getpid())


def keep(run_cache, stored, pid):
    """At the run's end (its main process only): copy the entries it built into the store."""
    if os.getpid() != pid:
        return
    try:
        os.makedirs(stored, mode=0o700, exist_ok=True)
        have = set(os.listdir(stored))
        for name in _entries(run_cache):
            if name not in have:
                part = os.path.join(stored, f".{name}.{pid}")
                shutil.copyfile(os.path.join(run_cache, name), part)
                os.replace(part, os.path.join(stored, name))
        for other in os.listdir(STORE):
            path = os.path.join(STORE, other)
            unused_since = os.stat(stored).st_mtime - os.stat(path).st_mtime if os.path.isdir(path) else 0
            if path != stored and unused_since > KEEP_UNUSED_S:
                shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass


class _AfterModuleCommon(importlib.abc.MetaPathFinder):
    """Runs seed() once ansible.executor.module_common has loaded (then leaves sys.meta_path)."""

    def find_spec(self, name, path, target=None):
        if name != MODULE_COMMON:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            try:
                seed()
            except Exception:  # noqa: BLE001 (a cache: Ansible builds its payloads as without it)
                pass
        spec.loader.exec_module = exec_module
        return spec


if os.geteuid() == 0:
    sys.meta_path.insert(0, _AfterModuleCommon())
