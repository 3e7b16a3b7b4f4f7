"""Byte-code cache for code Python imports from zip archives, for the test machines only.

Ansible runs every module as a zip of its code and module_utils (AnsiballZ), and Python compiles
what it imports from a zip each time: it keeps no __pycache__ there. A module run then spends
about a quarter of its CPU compiling the same ansible.module_utils again (measured on the 2-core
machine: 0.49 s of CPU a run of ansible.builtin.stat against 0.36 s with this cache; an
integration test file's playbooks 56 s against 45 s). This keeps each compiled source, named by
a hash of Python's magic number and the source, as __pycache__ does for a file, so what runs is
what would have been compiled.

Installed by the Makefile into the project's venv (the controller's local module runs) and by
scripts/build-test-image.sh into the test hosts' image, as a .pth file that imports this module;
never on a host the product deploys to. Root's processes only: the cache is a folder of root's,
mode 0700, and is not used if anyone else could write it; other users compile as before. The
module's arguments are not in the compiled sources (they travel beside the zip), so nothing
secret is kept.
"""
import _imp
import hashlib
import marshal
import os
import stat
import zipimport
from importlib._bootstrap_external import MAGIC_NUMBER  # (importlib.util has it; this is loaded already)

CACHE = "/var/cache/sglpb-zipimport"
# (Python's own compiler of a zip's source: called when the cache has no copy)
_compile_source = zipimport._compile_source


def cache_is_roots(path):
    """Whether the cache folder (made if missing) is root's and only root can write it."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and not st.st_mode & 0o022


def compile_cached(pathname, source):
    """zipimport's compile of a source, from the cache when it holds it (else compiled and kept)."""
    path = os.path.join(CACHE, hashlib.sha256(MAGIC_NUMBER + source).hexdigest())
    try:
        with open(path, "rb") as f:
            code = marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        code = _compile_source(pathname, source)
        if code is not None:
            try:
                tmp = f"{path}.{os.getpid()}"
                with open(tmp, "wb") as f:
                    f.write(marshal.dumps(code))
                os.replace(tmp, path)
            except OSError:
                pass
        return code
    # (the archive's path in tracebacks, as compiling it would have set)
    _imp._fix_co_filename(code, pathname)
    return code


if os.geteuid() == 0 and cache_is_roots(CACHE):
    zipimport._compile_source = compile_cached
