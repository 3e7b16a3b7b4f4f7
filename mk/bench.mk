# Benchmark, tune and report: the molecule bench scenario and its client venv.
MOLECULE_SCENARIOS += bench

.PHONY: bench-overhead

# The bench scenario runs SGLang's Rust client from the client venv on the controller.
MOLECULE_NEEDS += .cache/client-venv/.done

# Orchestration overhead of one 4-point sweep on one demo host (points of >= 20 s: concurrency
# 1024-1792 with 5 x C prompts at the stand-in's default time scale): the wall time of
# ansible-playbook minus the client's own run time (client_seconds: the client process alone, as
# the module reports it), over the client's time; the figure against the client tasks' durations
# is printed beside it. Needs `make demo` (hosts deployed).
OVERHEAD_HOST ?= sglpb-demo-1
## bench-overhead: the controller's overhead per point against the client's time (needs make demo's hosts)
bench-overhead: .cache/client-venv/.done
	@start=$$(date +%s.%N); \
	ANSIBLE_STDOUT_CALLBACK=ansible.posix.json $(BIN)/ansible-playbook -i inventory/demo -l $(OVERHEAD_HOST) \
	  playbooks/benchmark.yml -e sglang_benchmark_client_python=$(CURDIR)/.cache/client-venv/bin/python \
	  -e '{"sglang_benchmark_concurrencies": [1024, 1280, 1536, 1792], "sglang_benchmark_plateau_threshold": null}' \
	  > .cache/bench-overhead.json; end=$$(date +%s.%N); \
	$(PY) -c 'import json,sys,datetime as d; \
	t=lambda s: d.datetime.fromisoformat(s.replace("Z","+00:00")).timestamp(); \
	j=json.load(open(".cache/bench-overhead.json")); \
	runs=[(k, h) for p in j["plays"] for k in p["tasks"] if k["task"]["name"].endswith("Run the client") for h in k["hosts"].values() if not h.get("skipped")]; \
	c=[h["client_seconds"] for k, h in runs]; tk=[t(k["task"]["duration"]["end"])-t(k["task"]["duration"]["start"]) for k, h in runs]; \
	w=float(sys.argv[2])-float(sys.argv[1]); s=sum(c); each=" ".join("%.1f" % x for x in c); \
	print(f"points={len(c)} client_s={s:.1f} (each: {each}) play_wall_s={w:.1f} overhead={(w-s)/s:.1%}" \
	      f" (against the client tasks, {sum(tk):.1f} s: {(w-sum(tk))/sum(tk):.1%})")' $$start $$end
