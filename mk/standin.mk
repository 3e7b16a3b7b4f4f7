# The SGLang stand-in engine (standin/) and SGLang's own benchmark client against it.
# Included by the top-level Makefile, which provides VENV, PY and $(VENV)/.done.

VENV ?= .venv
PY ?= $(VENV)/bin/python

CLIENT_VENV := .cache/client-venv
CLIENT_PY := $(CLIENT_VENV)/bin/python
CLIENT_REQUIREMENTS := standin/requirements-client.txt
# Base interpreter for the client venvs: Debian 12's / CI's python3 (3.11).
CLIENT_BASE_PYTHON ?= python3

# SGLang's own clients, client-only, per SGLang release (the role's default path: the Python
# client on the server host, from the server's venv): sglang --no-deps plus the pinned list of
# what the client path imports (standin/requirements-client-VERSION.txt, ~6 GB each: a CUDA
# torch + torchvision that runs on the CPU). The sglang role installs the same file on stand-in
# hosts; the test hosts install it from CLIENT_WHEELHOUSE (mounted read-only, --no-index).
CLIENT_VERSIONS := 0.5.10.post1 0.5.23
CLIENT_VERSION_REQUIREMENTS := $(foreach v,$(CLIENT_VERSIONS),standin/requirements-client-$(v).txt)
CLIENT_VERSION_VENVS := $(foreach v,$(CLIENT_VERSIONS),.cache/client-venv-$(v)/.done)
CLIENT_WHEELHOUSE := .cache/client-wheelhouse
# Named by a hash of the requirement lines (comments left out: a reworded comment reuses them).
CLIENT_WHEELHOUSE_STORE := $(SGLPB_CACHE)/client-wheelhouse-$(shell grep -hv '^\#' $(CLIENT_VERSION_REQUIREMENTS) | sha256sum | cut -c1-12)

.PHONY: standin-sweep client-venv client-venvs client-wheelhouse test-standin test-standin-client \
	test-standin-clients $(foreach v,$(CLIENT_VERSIONS),client-venv-$(v))

## standin-sweep: print the calibrated throughput table (simulated time, both profiles)
standin-sweep:
	PYTHONPATH=standin $(CLIENT_BASE_PYTHON) -m sglang_standin.sweep

## client-venv: SGLang's benchmark client (Rust path) on a CPU torch, cached
client-venv: $(CLIENT_VENV)/.done

# Built once per requirements file in SGLPB_CACHE (see the Makefile) and linked here.
CLIENT_STORE := $(SGLPB_CACHE)/client-venv-$(shell cat $(CLIENT_REQUIREMENTS) | sha256sum | cut -c1-12)

# (after the host's set-up, which installs python3-venv where it is missing: make needs runs
# these side by side)
$(CLIENT_VENV)/.done: $(CLIENT_REQUIREMENTS) | .cache/host-setup.done
	bash scripts/cache-store.sh client-venv $(CLIENT_STORE) $(CLIENT_VENV) sh -c \
	  '$(CLIENT_BASE_PYTHON) -m venv "$$STORE" && "$$STORE"/bin/python -m pip install --quiet --no-deps -r $(CLIENT_REQUIREMENTS) && \
	   "$$STORE"/bin/python -m sglang.benchmark.rust_client --help > /dev/null'

## client-venvs: SGLang's clients of every release in CLIENT_VERSIONS, cached (~6 GB each)
client-venvs: $(CLIENT_VERSION_VENVS)

## client-venv-VERSION: one release's clients (VERSION in CLIENT_VERSIONS), cached
# client-venv-VERSION: one release's clients, built once per requirements file in SGLPB_CACHE,
# from the client wheelhouse (the same wheels: PyPI's ~3 GB per release is downloaded once).
define client_version_venv
client-venv-$(1): .cache/client-venv-$(1)/.done
.cache/client-venv-$(1)/.done: standin/requirements-client-$(1).txt $(CLIENT_WHEELHOUSE)/.done
	bash scripts/cache-store.sh client-venv-$(1) \
	  $$(SGLPB_CACHE)/client-venv-$(1)-$$$$(grep -v '^#' $$< | sha256sum | cut -c1-12) .cache/client-venv-$(1) sh -c \
	  '$$(CLIENT_BASE_PYTHON) -m venv "$$$$STORE" && "$$$$STORE"/bin/python -m pip install --quiet --no-deps \
	     --no-index --find-links $(CLIENT_WHEELHOUSE) -r $$< && \
	   "$$$$STORE"/bin/python -m $$(if $$(filter 0.5.10%,$(1)),sglang.bench_serving,sglang.benchmark.serving) --help > /dev/null && \
	   $$(call link_client_venvs,"$$$$STORE")'
endef
# The releases' venvs share torch and the CUDA libraries, file for file (~5.4 GB): hardlinked
# into one copy, so the page cache holds it once and a client start after another release's
# reads it from memory (this machine's disk reads ~45 MB/s; a cold start took 156 s, warm 17 s).
# A store is only linked to finished ones (.done); nothing writes into a finished store.
# (hardlink(1) is util-linux's; without it each venv keeps its own copy, and this says so.)
link_client_venvs = if command -v hardlink > /dev/null; then hardlink --quiet --ignore-time --minimum-size 64k $(1) \
	  $$(for d in $(SGLPB_CACHE)/client-venv-*-*/.done; do [ -e "$$d" ] && dirname "$$d"; done); \
	  else echo "no hardlink(1) (util-linux): the release client venvs keep a copy each"; fi
$(foreach v,$(CLIENT_VERSIONS),$(eval $(call client_version_venv,$(v))))
# One release's venv at a time, in CLIENT_VERSIONS' order (make needs builds three things at
# once): each hardlinks itself only to the finished ones.
$(foreach i,$(shell seq 2 $(words $(CLIENT_VERSIONS))),$(eval \
  $(word $(i),$(CLIENT_VERSION_VENVS)): | $(word $(shell expr $(i) - 1),$(CLIENT_VERSION_VENVS))))

## client-wheelhouse: the wheels of every client-VERSION file, for test hosts without an index
client-wheelhouse: $(CLIENT_WHEELHOUSE)/.done

$(CLIENT_WHEELHOUSE)/.done: $(CLIENT_VERSION_REQUIREMENTS) | .cache/host-setup.done
	bash scripts/cache-store.sh client-wheelhouse $(CLIENT_WHEELHOUSE_STORE) $(CLIENT_WHEELHOUSE) sh -c \
	  'mkdir -p "$$STORE" && for req in $(CLIENT_VERSION_REQUIREMENTS); do \
	     $(CLIENT_BASE_PYTHON) -m pip download --quiet --no-deps --only-binary :all: -d "$$STORE" -r $$req || exit 1; done'

## test-standin: the stand-in's tests, the real-client run included
test-standin: $(VENV)/.done $(CLIENT_VENV)/.done $(CLIENT_VERSION_VENVS)
	SGLANG_CLIENT_PYTHON=$(abspath $(CLIENT_PY)) SGLANG_CLIENT_VENVS_DIR=$(abspath .cache) $(PY) -m pytest tests/standin -q

## test-standin-client: SGLang's Rust benchmark client against the stand-in
test-standin-client: $(VENV)/.done $(CLIENT_VENV)/.done
	SGLANG_CLIENT_PYTHON=$(abspath $(CLIENT_PY)) $(PY) -m pytest tests/standin/test_real_client.py -q

## test-standin-clients: the role defaults' client argv through each release's real clients
test-standin-clients: $(VENV)/.done $(CLIENT_VERSION_VENVS)
	SGLANG_CLIENT_VENVS_DIR=$(abspath .cache) $(PY) -m pytest tests/standin/test_client_versions.py -q

# The bench scenario's test hosts install SGLang's client from the wheelhouse (mounted).
MOLECULE_NEEDS += $(CLIENT_WHEELHOUSE)/.done

# tests/standin/test_cli.py checks the stand-in's --config against SGLang 0.5.10.post1's own
# merger from that release's client venv (skipped without it): built before `make unit`, so that
# a first run checks it too.
UNIT_NEEDS += $(CLIENT_VERSION_VENVS)
