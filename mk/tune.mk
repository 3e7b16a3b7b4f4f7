# The tuning search (module_utils/tune_search.py) against the stand-in's performance model.
# Included by the top-level Makefile, which provides VENV, PY and $(VENV)/.done.

VENV ?= .venv
PY ?= $(VENV)/bin/python
# A landscape file (standin/sglang_standin/landscapes/*.yaml): the model's coefficients and the
# search to run on it.
LANDSCAPE ?= standin/sglang_standin/landscapes/reference.yaml

.PHONY: tune-sim

## tune-sim: the search on LANDSCAPE in simulated time, against a full grid and one flag at a time
tune-sim: $(VENV)/.done
	$(PY) scripts/tune_sim.py --landscape $(LANDSCAPE)
