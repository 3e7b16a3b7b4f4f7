"""Shared pytest setup: make ./module_utils importable as ansible.module_utils.*,
exactly as Ansible does for modules at run time (ansible.cfg: module_utils = ./module_utils)."""
import sys
from pathlib import Path

import ansible.module_utils

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"  # real outputs; each folder's README says where from
if str(REPO / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(REPO / "module_utils"))
if str(REPO / "library") not in sys.path:
    sys.path.insert(0, str(REPO / "library"))
