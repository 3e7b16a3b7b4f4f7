# sglang-playbooks: set-up, demo and tests. Run as root on a fresh Debian/Ubuntu machine:
#   make demo   the main job against local test hosts (podman) and the stand-in engine
#   make test   every test: lint, syntax, unit tests, real-client checks, molecule scenarios
#   make test-extra  the scenarios past make test's budget (the tuning search end to end, real
#                    SGLang's install); CI runs both (.ci/run)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# molecule scenarios run by `make test` (mk/*.mk add theirs; MOLECULE_ORDER below orders them)
MOLECULE_SCENARIOS ?= preflight default
PLAYBOOKS := $(wildcard playbooks/*.yml)
# the targets of `make test-extra` (mk/tune-search.mk and mk/real-sglang.mk add theirs)
EXTRA_TEST_TARGETS :=
# What pytest and the scenarios need built (venvs, wheelhouses, the image; mk/*.mk add theirs):
# `make test` builds them all first, three at a time (make needs).
UNIT_NEEDS := venv .cache/client-venv/.done
MOLECULE_NEEDS := venv image
# Virtual environments are built once per requirements file into SGLPB_CACHE (outside the
# clone, so CI's fresh clones reuse them) and linked into the project.
SGLPB_CACHE ?= $(HOME)/.cache/sglang-playbooks
export SGLPB_CACHE

-include mk/*.mk

.PHONY: help setup needs venv image lint syntax unit molecule test test-extra demo demo-hosts demo-clean clean

## help: list every target with its one-line description
help:
	@echo "sglang-playbooks: run as root on a fresh Debian/Ubuntu machine; make demo and make test do all set-up."
	@awk '/^## [^ :]+: / { sub(/^## /, ""); name = $$0; sub(/: .*/, "", name); text = substr($$0, length(name) + 3); \
	  printf "  make %-24s %s\n", name, text }' $(MAKEFILE_LIST)

.cache/host-setup.done: scripts/setup-host.sh
	bash scripts/setup-host.sh
	@mkdir -p .cache && touch $@

# Test machinery in the venv, root's only (their files are in the hash, as the requirements):
# scripts/zipimport-cache, a byte-code cache for the modules Ansible runs from zips on this
# machine (the test image has it too); scripts/ansiballz-cache, the modules' payloads that
# ansible-playbook builds, kept between playbook runs.
VENV_CACHES := $(wildcard $(addprefix scripts/zipimport-cache/*.,pth py) $(addprefix scripts/ansiballz-cache/*.,pth py))
VENV_STORE := $(SGLPB_CACHE)/venv-$(shell cat requirements-dev.txt $(VENV_CACHES) | sha256sum | cut -c1-12)

$(VENV)/.done: requirements-dev.txt $(VENV_CACHES) .cache/host-setup.done
	bash scripts/cache-store.sh venv $(VENV_STORE) $(VENV) sh -c \
	  '$(PYTHON) -m venv "$$STORE" && "$$STORE"/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt && \
	   cp $(VENV_CACHES) "$$STORE"/lib/python3*/site-packages/'

## venv: the project's venv (ansible-core, molecule, lint tools, pytest), cached in SGLPB_CACHE
venv: $(VENV)/.done
## setup: only install the prerequisites (podman, runc, debootstrap, openssh-server, the venv, the test image)
setup: venv image

## image: the test hosts' image (Debian 12 with systemd, built with debootstrap, for podman)
image: .cache/host-setup.done
	@flock /tmp/sglpb-test-image.lock bash scripts/build-test-image.sh

## lint: ruff, yamllint, ansible-lint (production), actionlint, and every module's docs in ansible-doc
lint: venv
	$(BIN)/ruff check .
	$(BIN)/yamllint --strict .
	$(BIN)/ansible-lint --profile production --offline
	@# the CI workflow (.github/workflows/ci.yml); shellcheck and pyflakes are not project tools
	$(BIN)/actionlint -shellcheck= -pyflakes=
	@# every module's DOCUMENTATION, EXAMPLES and RETURN must load in ansible-doc (one process for
	@# all of them: it names each module it cannot load and exits 1)
	@$(BIN)/ansible-doc -M library $(basename $(notdir $(wildcard library/*.py))) >/dev/null \
	  && echo "ansible-doc: every module loads"

## syntax: ansible-playbook --syntax-check of every playbook
syntax: venv
	@for pb in $(PLAYBOOKS); do \
	  echo "syntax-check $$pb"; $(BIN)/ansible-playbook --syntax-check -i inventory/example $$pb >/dev/null; \
	done

# Files are handed out in collection order, longest first (tests/conftest.py LONGEST_FIRST):
# --no-loadscope-reorder, since xdist otherwise reorders them by their number of tests, which
# left the long files of two or three tests (the SSH stop, the killed sweep) to the last minutes.
# One pytest worker per core and one more (pytest-xdist; a worker waiting on a client's cold
# start from disk leaves its core to the others: on 2 cores 3 workers kept the CPUs 94% busy
# against 81%, 410 s against 430 s), each test file on one worker (the integration tests'
# module fixtures run their playbooks once per file); -rs names every skipped test.
# SGLang's real clients against the stand-in (tests/standin/test_real_client.py, the Rust client;
# test_client_versions.py, each release's clients, mk/standin.mk) run here beside the rest, one
# pytest run rather than three (measured: the same wall time, 440 s against 441 s).
PYTEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
## unit: pytest: unit and integration tests, the stand-in, SGLang's real clients against it
unit: $(UNIT_NEEDS)
	SGLANG_CLIENT_PYTHON=$(abspath $(CLIENT_PY)) SGLANG_CLIENT_VENVS_DIR=$(abspath .cache) \
	  $(BIN)/pytest -q -rs -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 tests

# The scenarios run MOLECULE_JOBS at a time (each has its own containers and network; each runs
# under a lock of its own, so a second `make` or a person never runs it at once; a scenario's
# output is printed whole when it ends; one failing stops none of the others), the longest
# first (MOLECULE_ORDER; a scenario not named there runs after them). A scenario alone keeps 2
# CPUs a third to a half busy (it waits on its stand-ins' simulated GPU time and on one host's
# tasks one by one); two at a time keep them busy, so three at a time were no faster (890 s
# against 899 s).
MOLECULE_JOBS ?= 2
MOLECULE_ORDER := bench fleet default faults monitoring cuda preflight
MOLECULE_RUN := $(filter $(MOLECULE_SCENARIOS),$(MOLECULE_ORDER)) $(filter-out $(MOLECULE_ORDER),$(MOLECULE_SCENARIOS))

# A failed scenario's output is printed whole, and then, after every scenario has ended, why each
# one failed in a few lines (scripts/scenario-failure.py), so that a log that keeps only its tail
# (CI's) still says it.
MOLECULE_LOGS ?= .cache/molecule-logs
## molecule: every molecule scenario of make test, two at a time
molecule: $(MOLECULE_NEEDS)
	@rm -f $(MOLECULE_LOGS)/*.failed; \
	$(MAKE) --no-print-directory --keep-going -j$(MOLECULE_JOBS) --output-sync=target $(addprefix molecule-,$(MOLECULE_RUN)) \
	|| { for f in $(MOLECULE_LOGS)/*.failed; do [ -e "$$f" ] || continue; s=$$(basename $$f .failed); \
	       echo "=== molecule $$s failed (whole output above, and in $(MOLECULE_LOGS)/$$s.log):"; \
	       scripts/scenario-failure.py $(MOLECULE_LOGS)/$$s.log; done; exit 1; }

# Each scenario's task times (the profile_tasks callback: the 15 slowest tasks of each playbook
# run, and a clock on every task line) and each molecule step's start time, to find where a
# scenario's minutes go.
## molecule-NAME: one molecule scenario (molecule/NAME), with each task's time
molecule-%: venv image
	@echo "=== molecule test -s $*"; start=$$(date +%s); mkdir -p $(MOLECULE_LOGS); \
	ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks PROFILE_TASKS_TASK_OUTPUT_LIMIT=15 \
	  flock /tmp/molecule-$*.lock $(BIN)/molecule test -s $* 2>&1 | scripts/clock-lines.sh \
	  | tee $(MOLECULE_LOGS)/$*.log \
	|| { echo "=== molecule $*: FAILED after $$(( $$(date +%s) - start )) s"; touch $(MOLECULE_LOGS)/$*.failed; exit 1; }; \
	echo "=== molecule $*: passed in $$(( $$(date +%s) - start )) s"

# On a fresh machine the downloads and installs that `make test` needs take about ten minutes
# one after another with a core idle (they wait on the network and the disk as much as on the
# CPU): built three at a time instead. SGLang's release client venvs stay one at a time (each
# hardlinks itself to the finished ones: mk/standin.mk).
## needs: build everything pytest and the scenarios need (venvs, wheelhouses, the image), three at a time
needs:
	@$(MAKE) --no-print-directory --silent -j3 --output-sync=target $(sort $(UNIT_NEEDS) $(MOLECULE_NEEDS))
	@echo "make needs: the venvs, the wheelhouses and the image are ready"

# pytest keeps both cores busy; the scenarios leave a sixth of them idle (waiting on their
# stand-ins' simulated GPU time), so lint and the syntax checks run beside the scenarios at the
# lowest priority, on that idle time, rather than before everything. Their output is printed
# when they fail, after the scenarios' (make lint alone reports in a minute).
## test: every test: make needs, pytest with the real-client checks, then molecule with lint and syntax beside it
test: needs
	@$(MAKE) --no-print-directory unit
	@mkdir -p .cache; nice -n 19 $(MAKE) --no-print-directory lint syntax > .cache/checks-beside.log 2>&1 & \
	checks=$$!; status=0; $(MAKE) --no-print-directory molecule || status=$$?; \
	if wait $$checks; then echo "lint and syntax: passed, beside the scenarios (.cache/checks-beside.log)"; \
	else cat .cache/checks-beside.log; echo "lint and syntax: FAILED (above)"; status=1; fi; \
	[ $$status -eq 0 ] || { echo "make test: failed (the scenarios' failures, then lint's, above)"; exit $$status; }
	@echo "make test: all passed"

## test-extra: the scenarios past make test's budget: the tuning search end to end, real SGLang's install
test-extra: $(EXTRA_TEST_TARGETS)
	@echo "make test-extra: all passed"

## demo-hosts: start the two demo test hosts (podman), without deploying
demo-hosts: venv image
	bash scripts/demo-hosts.sh up

## demo: deploy the stand-in to two local test hosts, tune the reference's profiles, write the report
demo: demo-hosts $(CLIENT_VENV)/.done
	$(BIN)/ansible-playbook -i inventory/demo playbooks/deploy.yml
	$(BIN)/ansible-playbook -i inventory/demo playbooks/tune.yml \
	  -e sglang_benchmark_client_python=$(abspath $(CLIENT_PY)) -e bench_run_id=demo-$$(date -u +%Y%m%dT%H%M%SZ)
	@echo "make demo: report at $$(ls -td $(CURDIR)/results/demo-*/ | head -n 1)report.md" \
	  "(the two hosts stay up for more runs; make demo-clean removes them)"

## demo-clean: remove the demo hosts
demo-clean:
	bash scripts/demo-hosts.sh down

## clean: remove the demo hosts, the venv links and the client venvs of this clone
clean: demo-clean
	rm -rf $(VENV) .cache/client-venv .cache/client-venv-* .cache/client-wheelhouse .pytest_cache
