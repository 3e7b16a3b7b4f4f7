# Faults: the molecule faults scenario (startup failures, rollback, a hang, a crash mid-sweep, the
# controller killed mid-sweep and resumed, an unreachable host); docs/operations.md says what
# each message means. It runs SGLang's Rust client from the client venv on the controller.
MOLECULE_SCENARIOS += faults

MOLECULE_NEEDS += .cache/client-venv/.done

.PHONY: test-faults
## test-faults: the molecule faults scenario alone
test-faults: venv image .cache/client-venv/.done
	$(BIN)/molecule test -s faults
