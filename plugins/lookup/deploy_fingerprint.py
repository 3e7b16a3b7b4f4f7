"""deploy_fingerprint: the digest deploy.yml's fast path compares with the one recorded on the host."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

DOCUMENTATION = r"""
name: deploy_fingerprint
short_description: Digest of the deploy's settings and of the sources that apply them
description:
  - Returns the sha256 of I(settings) (any value that JSON can hold, e.g. a dict of variables)
    and of every file under the terms (paths relative to the repository root, files or
    directories), each file by its relative name and contents. Caches are left out
    (C(__pycache__), C(*.pyc), C(*.egg-info) and hidden names).
  - The same settings and the same sources give the same digest on any controller.
options:
  _terms:
    description: Files or directories, relative to the repository root.
    required: true
  settings:
    description: The values the digest covers besides the sources.
    type: raw
    default: null
"""

EXAMPLES = r"""
- name: Fingerprint the settings and the code of the deploy
  ansible.builtin.set_fact:
    fingerprint: "{{ lookup('deploy_fingerprint', 'playbooks', 'roles', settings={'port': 30000}) }}"
"""

RETURN = r"""
_raw:
  description: The sha256 digest, 64 hexadecimal characters.
  type: list
  elements: str
"""

# plugins/lookup/deploy_fingerprint.py -> the repository root
ROOT = Path(__file__).resolve().parents[2]


def fingerprint(root: Path, paths: list[str], settings: object) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    for rel in sorted(paths):
        top = root / rel
        if not top.exists():
            raise AnsibleLookupError(f"deploy_fingerprint: {rel} does not exist under {root}")
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            parts = path.relative_to(root).parts
            if path.suffix == ".pyc" or any(p == "__pycache__" or p.startswith(".") or p.endswith(".egg-info")
                                            for p in parts):
                continue
            digest.update(f"\0{path.relative_to(root)}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [fingerprint(ROOT, list(terms), self.get_option("settings"))]
