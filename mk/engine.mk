# SGLang's released packages as they install, for the tests that read what the engine does with
# each server arg (tests/unit/test_engine_args.py: module_utils/engine_args.py on real code).
# Each release's wheel from PyPI, unpacked without its dependencies and without its non-Python
# files (~60 MB of downloads, ~100 MB on disk), built once into SGLPB_CACHE and linked here.
# Included by the top-level Makefile, which provides VENV and $(VENV)/.done.

ENGINE_SOURCE_VERSIONS := 0.5.10.post1 0.5.11 0.5.23
ENGINE_SOURCES := .cache/sglang-sources
ENGINE_SOURCES_STORE := $(SGLPB_CACHE)/sglang-sources-$(shell echo $(ENGINE_SOURCE_VERSIONS) | sha256sum | cut -c1-12)

.PHONY: sglang-sources

## sglang-sources: SGLang's released packages (sources only) for the engine-args tests
sglang-sources: $(ENGINE_SOURCES)/.done

$(ENGINE_SOURCES)/.done: | $(VENV)/.done
	bash scripts/cache-store.sh sglang-sources $(ENGINE_SOURCES_STORE) $(ENGINE_SOURCES) sh -c \
	  'for v in $(ENGINE_SOURCE_VERSIONS); do \
	     $(VENV)/bin/pip download --quiet --disable-pip-version-check --no-deps --dest "$$STORE/wheels" "sglang==$$v" && \
	     mkdir -p "$$STORE/$$v" && $(VENV)/bin/python -m zipfile -e "$$STORE"/wheels/sglang-"$$v"-*.whl "$$STORE/$$v" && \
	     find "$$STORE/$$v" -type f ! -name "*.py" -delete; \
	   done && rm -rf "$$STORE/wheels"'

UNIT_NEEDS += $(ENGINE_SOURCES)/.done
