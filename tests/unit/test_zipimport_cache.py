"""scripts/zipimport-cache: the byte-code cache of what Python imports from a zip (Ansible's
modules), in a Python started without site (-S) so that the venv's own copy stays out of it."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[2] / "scripts" / "zipimport-cache"

# Imports mod from the zip twice (forgetting it between) with the cache in CACHE_DIR, and prints
# how many sources were compiled, the function's result and its code's file name.
PROGRAM = """
import json, sys, zipimport
sys.path.insert(0, HOOK)
import sglpb_zipimport_cache as cache
cache.CACHE = CACHE_DIR
compiled = []
compile_source = cache._compile_source
cache._compile_source = lambda path, source: compiled.append(path) or compile_source(path, source)
zipimport._compile_source = cache.compile_cached
sys.path.insert(0, ZIP)
out = []
for _ in range(2):
    import mod
    out.append([len(compiled), mod.answer(), mod.answer.__code__.co_filename])
    del sys.modules["mod"]
    sys.path_importer_cache.clear()
print(json.dumps(out))
"""


def run(zip_path, cache_dir):
    program = (PROGRAM.replace("HOOK", repr(str(HOOK))).replace("CACHE_DIR", repr(str(cache_dir)))
               .replace("ZIP", repr(str(zip_path))))
    out = subprocess.run([sys.executable, "-S", "-c", program], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def make_zip(path, answer):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mod.py", f"def answer():\n    return {answer}\n")


def test_a_source_is_compiled_once_and_then_read_from_the_cache(tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    make_zip(tmp_path / "a.zip", 41)
    first = run(tmp_path / "a.zip", cache_dir)
    # the first import compiles (and keeps it), the second reads the kept code
    assert first == [[1, 41, f"{tmp_path}/a.zip/mod.py"], [1, 41, f"{tmp_path}/a.zip/mod.py"]]
    assert len(list(cache_dir.iterdir())) == 1
    # another archive with the same source: no compile, and its own path in tracebacks
    make_zip(tmp_path / "b.zip", 41)
    assert run(tmp_path / "b.zip", cache_dir)[0] == [0, 41, f"{tmp_path}/b.zip/mod.py"]
    # a changed source is compiled anew, never answered from the old one
    make_zip(tmp_path / "c.zip", 42)
    assert run(tmp_path / "c.zip", cache_dir)[0] == [1, 42, f"{tmp_path}/c.zip/mod.py"]
    assert len(list(cache_dir.iterdir())) == 2


def test_a_damaged_cache_entry_is_compiled_again(tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    make_zip(tmp_path / "a.zip", 7)
    run(tmp_path / "a.zip", cache_dir)
    (entry,) = cache_dir.iterdir()
    entry.write_bytes(b"\x00")
    assert run(tmp_path / "a.zip", cache_dir)[0] == [1, 7, f"{tmp_path}/a.zip/mod.py"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the cache is root's: the folder's owner is checked")
def test_a_cache_folder_others_can_write_is_not_used(tmp_path):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    os.symlink(tmp_path / "new", tmp_path / "link")
    program = (f"import sys; sys.path.insert(0, {str(HOOK)!r}); import sglpb_zipimport_cache as cache; "
               f"print([cache.cache_is_roots(p) for p in sys.argv[1:]])")
    out = subprocess.run([sys.executable, "-S", "-c", program, str(open_dir), str(tmp_path / "new"),
                          str(tmp_path / "link")], capture_output=True, text=True, check=True)
    # others may write the first; the second is made, root's, 0700; the third is a link to it
    assert out.stdout.strip() == "[False, True, False]"
    assert (tmp_path / "new").stat().st_mode & 0o777 == 0o700
