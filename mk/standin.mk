# The SGLang stand-in engine (standin/) and SGLang's own benchmark client against it.
# Included by the top-level Makefile, which provides VENV, PY and $(VENV)/.done.

VENV ?= .venv
PY ?= $(VENV)/bin/python

CLIENT_VENV := .cache/client-venv
CLIENT_PY := $(CLIENT_VENV)/bin/python
CLIENT_REQUIREMENTS := standin/requirements-client.txt
PYCLIENT_VENV := .cache/client-venv-python
PYCLIENT_PY := $(PYCLIENT_VENV)/bin/python
PYCLIENT_REQUIREMENTS := standin/requirements-pyclient.txt
# Base interpreter for the client venvs: Debian 12's / CI's python3 (3.11).
CLIENT_BASE_PYTHON ?= python3

# What `make test` runs for the stand-in: its tests plus the real Rust client run.
STANDIN_TEST_TARGETS := test-standin-client
export STANDIN_TEST_TARGETS

.PHONY: standin-sweep client-venv client-venv-python test-standin test-standin-client \
	test-standin-pyclient

## standin-sweep: print the calibrated throughput table (simulated time, both profiles)
standin-sweep:
	PYTHONPATH=standin $(CLIENT_BASE_PYTHON) -m sglang_standin.sweep

## client-venv: SGLang's benchmark client (Rust path) on a CPU torch, cached
client-venv: $(CLIENT_VENV)/.done

# Built once per requirements file in SGLPB_CACHE (see the Makefile) and linked here.
CLIENT_STORE := $(SGLPB_CACHE)/client-venv-$(shell cat $(CLIENT_REQUIREMENTS) | sha256sum | cut -c1-12)

$(CLIENT_VENV)/.done: $(CLIENT_REQUIREMENTS)
	@if [ ! -f $(CLIENT_STORE)/.done ]; then \
	  rm -rf $(CLIENT_STORE) && mkdir -p $(SGLPB_CACHE) && $(CLIENT_BASE_PYTHON) -m venv $(CLIENT_STORE) && \
	  $(CLIENT_STORE)/bin/python -m pip install --quiet --no-deps -r $(CLIENT_REQUIREMENTS) && \
	  $(CLIENT_STORE)/bin/python -m sglang.benchmark.rust_client --help > /dev/null && \
	  touch $(CLIENT_STORE)/.done; \
	else echo "client-venv: reusing $(CLIENT_STORE)"; fi
	mkdir -p $(dir $(CLIENT_VENV)) && rm -rf $(CLIENT_VENV) && ln -s $(CLIENT_STORE) $(CLIENT_VENV)
	touch $(CLIENT_STORE)/.done

## client-venv-python: SGLang's Python benchmark client (~6 GB: CUDA torch + torchvision)
client-venv-python: $(PYCLIENT_VENV)/.done

$(PYCLIENT_VENV)/.done: $(PYCLIENT_REQUIREMENTS)
	rm -rf $(PYCLIENT_VENV)
	$(CLIENT_BASE_PYTHON) -m venv $(PYCLIENT_VENV)
	# torch and torchvision with their own dependencies (a matching pair; PyPI's
	# torchvision does not load beside the CPU torch 2.13.0 wheel), then the client.
	$(PYCLIENT_PY) -m pip install --quiet $$(grep -E '^(torch|torchvision)==' $(PYCLIENT_REQUIREMENTS))
	$(PYCLIENT_PY) -m pip install --quiet --no-deps -r $(PYCLIENT_REQUIREMENTS)
	$(PYCLIENT_PY) -m sglang.benchmark.serving --help > /dev/null
	touch $@

## test-standin: the stand-in's tests, the real-client run included
test-standin: $(VENV)/.done $(CLIENT_VENV)/.done
	SGLANG_CLIENT_PYTHON=$(abspath $(CLIENT_PY)) $(PY) -m pytest tests/standin -q

## test-standin-client: SGLang's Rust benchmark client against the stand-in
test-standin-client: $(VENV)/.done $(CLIENT_VENV)/.done
	SGLANG_CLIENT_PYTHON=$(abspath $(CLIENT_PY)) $(PY) -m pytest tests/standin/test_real_client.py -q

## test-standin-pyclient: SGLang's Python benchmark client against the stand-in
test-standin-pyclient: $(VENV)/.done $(PYCLIENT_VENV)/.done
	SGLANG_PYCLIENT_PYTHON=$(abspath $(PYCLIENT_PY)) $(PY) -m pytest tests/standin/test_python_client.py -q
