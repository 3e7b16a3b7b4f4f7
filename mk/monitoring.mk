# Monitoring (roles/monitoring, playbooks/monitoring.yml): the molecule monitoring scenario, in
# `make test`. Debian's prometheus and prometheus-node-exporter (and their dependencies: 17 debs, ~105 MB with apt's lists)
# are cached under $(SGLPB_CACHE)/monitoring, mounted into the test host as apt's archives and
# lists, so only the first run downloads them and CI's cache of SGLPB_CACHE holds them.
MOLECULE_SCENARIOS += monitoring
MONITORING_CACHE := $(SGLPB_CACHE)/monitoring

.PHONY: monitoring-cache

# (an apt list folder without lists is dated back, as in the test image, so that the roles'
# cache_valid_time sees it stale and fills it)
## monitoring-cache: the folders that cache Debian's Prometheus packages for the monitoring scenario
monitoring-cache:
	@mkdir -p $(MONITORING_CACHE)/apt-archives/partial $(MONITORING_CACHE)/apt-lists/partial
	@ls $(MONITORING_CACHE)/apt-lists | grep -q _Packages || touch -d 2000-01-01 $(MONITORING_CACHE)/apt-lists

# The scenario's host installs smg from the wheelhouse (mk/fleet.mk) and Debian's packages
# through the cache; molecule-% (the Makefile) runs it.
molecule-monitoring: monitoring-cache $(SMG_WHEELHOUSE)/.done
