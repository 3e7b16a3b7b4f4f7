# Benchmark, tune and report (issue 5): the molecule bench scenario and its client venv.
MOLECULE_SCENARIOS += bench

.PHONY: bench-overhead

# The bench scenario runs SGLang's Rust client from the client venv on the controller.
molecule: $(CLIENT_VENV)/.done
