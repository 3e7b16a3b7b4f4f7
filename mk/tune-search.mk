# The tuning search end to end: tune.yml -e tune_search=true on one stand-in host (the molecule
# tune-search scenario; SGLang's Rust client on the controller, 306 s on 2 cores from a fresh clone).
# Not in make test's MOLECULE_SCENARIOS (past make test's budget): in
# `make test-extra`, which CI runs after make test (.ci/run).
EXTRA_TEST_TARGETS += test-tune-search

.PHONY: test-tune-search

## test-tune-search: the tuning search's playbook against a stand-in host (molecule tune-search)
test-tune-search: venv image $(CLIENT_VENV)/.done
	@$(MAKE) --no-print-directory molecule-tune-search
