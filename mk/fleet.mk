# Fleet: SGLang's router (smg) in front of stand-in workers and a two-node server, the molecule
# fleet scenario (in `make test`; `make test-fleet` runs it alone).
MOLECULE_SCENARIOS += fleet

SMG_REQUIREMENTS := $(wildcard roles/sglang_router/files/requirements-smg-*.txt)
SMG_WHEELHOUSE := .cache/smg-wheelhouse
# Named by a hash of the requirement lines (comments left out).
SMG_WHEELHOUSE_STORE := $(SGLPB_CACHE)/smg-wheelhouse-$(shell grep -hv '^\#' $(SMG_REQUIREMENTS) | sha256sum | cut -c1-12)

.PHONY: smg-wheelhouse smg-venv test-fleet

## smg-wheelhouse: the wheels of the router role's pinned smg, for test hosts without an index
smg-wheelhouse: $(SMG_WHEELHOUSE)/.done

$(SMG_WHEELHOUSE)/.done: $(SMG_REQUIREMENTS) | .cache/host-setup.done
	bash scripts/cache-store.sh smg-wheelhouse $(SMG_WHEELHOUSE_STORE) $(SMG_WHEELHOUSE) sh -c \
	  'mkdir -p "$$STORE" && for req in $(SMG_REQUIREMENTS); do \
	     $(CLIENT_BASE_PYTHON) -m pip download --quiet --no-deps --only-binary :all: -d "$$STORE" -r $$req || exit 1; done'

# The router host installs smg from the wheelhouse; the benchmark runs the Rust client.
MOLECULE_NEEDS += $(SMG_WHEELHOUSE)/.done .cache/client-venv/.done

## test-fleet: the molecule fleet scenario (two stand-in workers behind the real smg router)
test-fleet: venv image $(SMG_WHEELHOUSE)/.done .cache/client-venv/.done
	flock /tmp/molecule-fleet.lock $(BIN)/molecule test -s fleet

## smg-venv: smg on the controller (scripts/measure_router.sh), from the wheelhouse
smg-venv: .cache/smg-venv/.done

.cache/smg-venv/.done: $(SMG_WHEELHOUSE)/.done
	rm -rf .cache/smg-venv && $(CLIENT_BASE_PYTHON) -m venv .cache/smg-venv
	.cache/smg-venv/bin/python -m pip install --quiet --no-index --find-links $(SMG_WHEELHOUSE) -r $(SMG_REQUIREMENTS)
	touch $@
