# The hashed locks of the SGLang server venv (roles/sglang/files/locks/sglang-<release>-py<X.Y>.txt),
# which the sglang role installs with `pip install --require-hashes -r`: per release of the
# compatibility table (roles/sglang/vars/main.yml) and per Python of the supported hosts, resolved
# by scripts/sglang_lock.py with uv (a pinned uv in its own venv under SGLPB_CACHE) as PyPI was at
# LOCK_EXCLUDE_NEWER; a lock that exists keeps its pins where the inputs allow, so a rerun gives
# the same files and a new constraint of the table moves only what it must. To move a lock to newer
# packages, raise LOCK_EXCLUDE_NEWER (here, so that it is the one date every lock was made at),
# delete the locks and run `make lock`.
# A lock of your own (extras, more pins, another index):
#   make lock-0.5.10.post1 LOCK_EXTRAS=a,b LOCK_PACKAGES='flashinfer-python==X' LOCK_OUT_DIR=/path
# then point sglang_lock at it.
LOCK_UV_VERSION := 0.13.9
LOCK_UV := $(SGLPB_CACHE)/uv-$(LOCK_UV_VERSION)/bin/uv
LOCK_EXCLUDE_NEWER ?= 2026-12-02T00:00:00Z
LOCK_INDEX_URL ?= https://pypi.org/simple
LOCK_EXTRAS ?=
LOCK_PACKAGES ?=
LOCK_OUT_DIR ?= roles/sglang/files/locks
LOCK_RELEASES := $(shell sed -n '/^sglang_compat:/,/^[^ ]/s/^  "\([^"]*\)":.*/\1/p' roles/sglang/vars/main.yml)
LOCK_ARGS = --uv $(LOCK_UV) --exclude-newer $(LOCK_EXCLUDE_NEWER) --index-url $(LOCK_INDEX_URL) \
	--extras '$(LOCK_EXTRAS)' --packages '$(LOCK_PACKAGES)' --out-dir $(LOCK_OUT_DIR)

.PHONY: lock $(foreach r,$(LOCK_RELEASES),lock-$(r))

$(LOCK_UV):
	$(PYTHON) -m venv $(SGLPB_CACHE)/uv-$(LOCK_UV_VERSION)
	$(SGLPB_CACHE)/uv-$(LOCK_UV_VERSION)/bin/pip install -q --disable-pip-version-check uv==$(LOCK_UV_VERSION)

## lock: resolve the hashed locks of every SGLang release of the compatibility table
lock: venv $(LOCK_UV)
	$(PY) scripts/sglang_lock.py $(LOCK_ARGS) $(LOCK_RELEASES)

## lock-VERSION: resolve one release's locks (roles/sglang/files/locks/sglang-VERSION-pyX.Y.txt)
$(foreach r,$(LOCK_RELEASES),lock-$(r)): lock-%: venv $(LOCK_UV)
	$(PY) scripts/sglang_lock.py $(LOCK_ARGS) $*
