# The tuning search end to end: tune.yml -e tune_search=true on one stand-in host (the molecule
# tune-search scenario; SGLang's Rust client on the controller, about 10 minutes on 2 cores).
# Not in make test's MOLECULE_SCENARIOS: about 10 minutes alone, past make test's budget.

.PHONY: test-tune-search

## test-tune-search: the tuning search's playbook against a stand-in host (molecule tune-search)
test-tune-search: venv image $(CLIENT_VENV)/.done
	flock /tmp/molecule-tune-search.lock $(BIN)/molecule test -s tune-search
