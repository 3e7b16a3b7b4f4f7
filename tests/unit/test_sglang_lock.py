"""The server venv's locks: the committed files (roles/sglang/files/locks/) against the compatibility
table, their parser and the installed-set comparison (module_utils/sglang_lock.py), the module
sglang_venv_packages on a real venv's Python, and scripts/sglang_lock.py's output read back."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sglang_venv_packages
import yaml
from ansible.module_utils.sglang_lock import LockError, compare, normalize, parse_lock
from packaging.requirements import Requirement
from sglang_sources import release_definition, release_path

REPO = Path(__file__).resolve().parents[2]
LOCKS = REPO / "roles/sglang/files/locks"
COMPAT = yaml.safe_load((REPO / "roles/sglang/vars/main.yml").read_text())["sglang_compat"]
PYTHONS = ("3.10", "3.11", "3.12")


def locks():
    return sorted(LOCKS.glob("sglang-*-py*.txt"))


def test_the_releases_the_project_uses_are_locked_for_every_python():
    for release in ("0.5.10.post1", "0.5.11"):
        for python in PYTHONS:
            assert (LOCKS / f"sglang-{release}-py{python}.txt").is_file(), (release, python)


@pytest.mark.parametrize("path", locks(), ids=lambda p: p.name)
def test_each_lock_pins_its_release_the_tables_torch_and_every_package_with_a_hash(path):
    text = path.read_text()
    lock = parse_lock(text)
    release, python = path.name[len("sglang-"):-len(".txt")].rsplit("-py", 1)
    meta = lock["meta"]
    assert meta["sglang"] == release and meta["python"] == python
    assert meta["torch"] == COMPAT[release]["torch"], "the lock is stale: run make lock-" + release
    assert meta["platform"].startswith("x86_64-manylinux") and meta["exclude-newer"]
    assert lock["pins"]["sglang"] == release and lock["pins"]["torch"] == COMPAT[release]["torch"]
    assert len(lock["pins"]) > 100
    # every pin is followed by its hashes: as many pin blocks as blocks with a sha256
    blocks = text.splitlines()
    pins = [i for i, line in enumerate(blocks) if line[:1].isalnum()]
    for start, end in zip(pins, pins[1:] + [len(blocks)], strict=True):
        assert any("--hash=sha256:" in line for line in blocks[start:end]), blocks[start]


def test_the_cuda_lane_of_the_table_is_the_lanes_of_the_locked_cuda_libraries():
    cu12 = parse_lock((LOCKS / "sglang-0.5.10.post1-py3.11.txt").read_text())["pins"]
    cu13 = parse_lock((LOCKS / "sglang-0.5.11-py3.11.txt").read_text())["pins"]
    assert cu12["nvidia-cuda-runtime-cu12"].startswith("12.8") and "nvidia-cuda-runtime" not in cu12
    assert cu13["nvidia-cuda-runtime"].startswith("13.0")


def test_parse_lock_reads_names_as_pep503_and_refuses_what_is_not_a_lock():
    text = ("# sglang-lock: sglang=1.0 torch=2.0 python=3.11 extras=\n"
            "PyYAML==6.0.2 \\\n    --hash=sha256:aa\nruamel.yaml==0.18 \\\n    --hash=sha256:bb\nplain==1\n")
    lock = parse_lock(text)
    assert lock["pins"] == {"pyyaml": "6.0.2", "ruamel-yaml": "0.18", "plain": "1"}
    assert lock["meta"] == {"sglang": "1.0", "torch": "2.0", "python": "3.11", "extras": ""}
    with pytest.raises(LockError, match="line 2 is not a name==version pin: 'torch>=2'"):
        parse_lock("a==1\ntorch>=2\n")
    with pytest.raises(LockError, match="pins a-b a second time"):
        parse_lock("a_b==1\nA.B==2\n")
    with pytest.raises(LockError, match="no name==version pins"):
        parse_lock("# only a comment\n")
    assert normalize("Foo__Bar.baz") == "foo-bar-baz"


def test_compare_names_each_difference_and_counts_seeds_only_where_locked():
    pins = {"torch": "2.9.1", "numpy": "2.3.5", "setuptools": "80.0"}
    same = compare({"Torch": "2.9.1", "NumPy": "2.3.5", "setuptools": "80.0", "pip": "23.0.1"}, pins)
    assert same == {"matches": True, "missing": [], "extra": [], "different": []}
    off = compare({"torch": "2.9.1", "numpy": "2.4.0", "setuptools": "66.1.1", "rich": "13", "wheel": "0.4"}, pins)
    assert off == {"matches": False, "missing": [], "extra": ["rich==13"],
                   "different": ["numpy installed 2.4.0, lock 2.3.5", "setuptools installed 66.1.1, lock 80.0"]}
    assert compare({"torch": "2.9.1"}, pins)["missing"] == ["numpy==2.3.5", "setuptools==80.0"]


def installed_here():
    out = subprocess.run([sys.executable, "-I", "-c", sglang_venv_packages.LIST_PACKAGES],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_the_module_lists_a_venvs_packages_and_compares_them_with_a_lock(run_module, tmp_path):
    installed = installed_here()
    lock = tmp_path / "lock.txt"
    lock.write_text("".join(f"{normalize(n)}=={v} \\\n    --hash=sha256:00\n" for n, v in installed.items()))
    result = run_module(sglang_venv_packages, python=sys.executable, lock=str(lock))
    assert result["present"] is True and result["lock_found"] is True and result["matches"] is True
    assert f"pyyaml=={installed['PyYAML']}" in result["packages"] and result["changed"] is False
    lock.write_text(lock.read_text().replace(f"pyyaml=={installed['PyYAML']}", "pyyaml==0.0.1")
                    + "not-installed==1.0\n")
    result = run_module(sglang_venv_packages, python=sys.executable, lock=str(lock))
    assert result["matches"] is False and result["missing"] == ["not-installed==1.0"]
    assert result["different"] == [f"pyyaml installed {installed['PyYAML']}, lock 0.0.1"]


def test_the_module_on_a_fresh_host_and_on_a_broken_lock(run_module, tmp_path):
    fresh = run_module(sglang_venv_packages, python=str(tmp_path / "venv/bin/python"), lock=str(tmp_path / "none"))
    assert fresh["present"] is False and fresh["packages"] == [] and fresh["lock_found"] is False
    assert fresh["matches"] is False and fresh["rc_exit"] == 0
    bad = tmp_path / "bad.txt"
    bad.write_text("torch>=2\n")
    failed = run_module(sglang_venv_packages, python=sys.executable, lock=str(bad))
    assert failed["failed"] is True and failed["msg"].startswith(f"{bad} is not a readable lock (sglang_lock): line 1")


def test_the_lock_script_writes_what_the_parser_and_the_role_read(tmp_path):
    # a uv that answers as uv pip compile does, with the requirements it was given
    uv = tmp_path / "uv"
    # (and as it does for a Python the release has no wheel for: it fails)
    # (a constraint, the table's fastapi<0.137, resolves to 0.136.3; with --output-file, uv writes
    # there, after reading the pins it holds: the fake keeps a copy of what it found)
    uv.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'uv 9.9.9'; exit 0; }\n"
                  "case \"$*\" in *'--python-version 3.10'*) echo 'no wheel for cp310' >&2; exit 1;; esac\n"
                  "echo \"$@\" > \"$(dirname \"$0\")/argv\"\n"
                  "out=$(echo \"$@\" | sed -n 's/.*--output-file \\([^ ]*\\).*/\\1/p')\n"
                  "[ -n \"$out\" ] && cp \"$out\" \"$(dirname \"$0\")/previous\"\n"
                  "sed 's/\\[.*\\]//; s/<.*/==0.136.3/; s/$/ \\\\/' | while read -r pin; do\n"
                  "  printf '%s\\n    --hash=sha256:ab\\n' \"$pin\"; done > \"${out:-/dev/stdout}\"\n")
    uv.chmod(0o755)
    made = subprocess.run([sys.executable, str(REPO / "scripts/sglang_lock.py"), "--uv", str(uv),
                           "--python", "3.10", "--python", "3.11", "--exclude-newer", "2026-01-01T00:00:00Z",
                           "--extras", "tracing", "--packages", "flashinfer-python==0.6.8",
                           "--out-dir", str(tmp_path), "0.5.10.post1"], check=True, text=True, capture_output=True)
    assert made.stderr == "sglang 0.5.10.post1 has no release for Python 3.10: no lock\n"
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == ["sglang-0.5.10.post1-py3.11.txt"]
    lock = parse_lock((tmp_path / "sglang-0.5.10.post1-py3.11.txt").read_text())
    assert lock["pins"] == {"sglang": "0.5.10.post1", "torch": "2.9.1", "fastapi": "0.136.3",
                            "flashinfer-python": "0.6.8"}
    assert "--output-file" not in (tmp_path / "argv").read_text()  # (no lock before)
    assert lock["meta"]["extras"] == "tracing" and lock["meta"]["python"] == "3.11"
    argv = (tmp_path / "argv").read_text().split()
    for option in ("--python-platform", "x86_64-manylinux_2_35", "--python-version", "3.11",
                   "--generate-hashes", "--exclude-newer", "2026-01-01T00:00:00Z"):
        assert option in argv
    # made again: uv is given the lock made before as its output file, to keep its pins
    first = (tmp_path / "sglang-0.5.10.post1-py3.11.txt").read_text()
    subprocess.run([sys.executable, str(REPO / "scripts/sglang_lock.py"), "--uv", str(uv), "--python", "3.11",
                    "--exclude-newer", "2026-01-01T00:00:00Z", "--extras", "tracing", "--packages",
                    "flashinfer-python==0.6.8", "--out-dir", str(tmp_path), "0.5.10.post1"], check=True)
    assert "--output-file" in (tmp_path / "argv").read_text() and (tmp_path / "previous").read_text() == first
    assert (tmp_path / "sglang-0.5.10.post1-py3.11.txt").read_text() == first
    unknown = subprocess.run([sys.executable, str(REPO / "scripts/sglang_lock.py"), "--exclude-newer", "2026-01-01",
                              "0.4.0"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "not in the compatibility table" in unknown.stderr


def request_path_rule(version: str) -> str:
    """What the release's metrics middleware (--enable-metrics) counts a matched request under:
    the first element its _get_fastapi_request_path returns for a route that matched (in
    utils/common.py until it moved to observability/http_request_metrics.py)."""
    name = next((name for name in ("sglang/srt/utils/common.py", "sglang/srt/observability/http_request_metrics.py")
                 if "def _get_fastapi_request_path" in release_path(version, name).read_text()), None)
    assert name, f"no _get_fastapi_request_path in SGLang {version}"
    func = release_definition(version, name, "_get_fastapi_request_path")
    matched = next(n.value for n in ast.walk(func) if isinstance(n, ast.Return)
                   and isinstance(n.value, ast.Tuple) and ast.unparse(n.value.elts[1]) == "True")
    return ast.unparse(matched.elts[0])


@pytest.mark.parametrize("version", ["0.5.10.post1", "0.5.11", "0.5.23"])
def test_a_release_that_reads_route_path_is_locked_below_fastapi_0_137(version):
    # FastAPI 0.137.0 mounts an included router (SGLang's /v1/loads) as an _IncludedRouter with no
    # path: a release whose metrics middleware reads route.path answers /v1/loads 500 there, as a
    # real 0.5.11 with FastAPI 0.165.0 did (tests/fixtures/real-sglang-0.5.11/loads-fastapi-0.165.0)
    rule = request_path_rule(version)
    fastapi = [c for c in COMPAT[version].get("constraints", []) if Requirement(c).name == "fastapi"]
    if rule == "route.path":
        assert fastapi == ["fastapi<0.137"], version
    else:
        assert (rule, fastapi) == ("getattr(route, 'path', request.url.path)", [])


@pytest.mark.parametrize("path", locks(), ids=lambda p: p.name)
def test_each_lock_meets_its_releases_constraints(path):
    release = path.name[len("sglang-"):-len(".txt")].rsplit("-py", 1)[0]
    pins = parse_lock(path.read_text())["pins"]
    for constraint in COMPAT[release].get("constraints", []):
        wanted = Requirement(constraint)
        assert wanted.specifier.contains(pins[normalize(wanted.name)]), (constraint, "run make lock-" + release)
