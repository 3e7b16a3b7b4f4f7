# The deploy path against real SGLang (molecule/real-sglang): the sglang role installs
# inventory/example's release (0.5.10.post1, torch 2.9.1 with its CUDA wheels) from PyPI into a
# test host through its lock (mk/lock.mk), the installed set is checked equal to the lock, and
# every profile's args are checked against `python -m sglang.launch_server --help`.
# PyPI's wheels and Debian's packages are cached under $(SGLPB_CACHE)/real-sglang, so only the
# first run downloads (several GB). Not part of `make test` (see the README for its cost): in
# `make test-extra`, which CI runs after make test (.ci/run).
EXTRA_TEST_TARGETS += test-real-sglang
REAL_SGLANG_CACHE := $(SGLPB_CACHE)/real-sglang

.PHONY: test-real-sglang real-sglang-cache

# (an apt list folder without lists is dated back, as in the test image, so that the roles'
# cache_valid_time sees it stale and fills it)
## real-sglang-cache: the folders that cache PyPI's wheels and Debian's packages for test-real-sglang
real-sglang-cache:
	@mkdir -p $(REAL_SGLANG_CACHE)/wheels $(REAL_SGLANG_CACHE)/apt-archives/partial $(REAL_SGLANG_CACHE)/apt-lists/partial
	@ls $(REAL_SGLANG_CACHE)/apt-lists | grep -q _Packages || touch -d 2000-01-01 $(REAL_SGLANG_CACHE)/apt-lists

## test-real-sglang: install real SGLang on a test host and check every profile's args
test-real-sglang: venv image real-sglang-cache
	@start=$$(date +%s); $(BIN)/molecule test -s real-sglang; \
	echo "make test-real-sglang: passed in $$(( $$(date +%s) - start )) s (wheelhouse $$(du -sh $(REAL_SGLANG_CACHE)/wheels | cut -f1))"
