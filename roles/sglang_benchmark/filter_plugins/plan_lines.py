"""Filter sglang_benchmark_plan_lines: the lines playbooks/plan.yml (and benchmark.yml -e
bench_dry_run=true) shows for a host: the launch script deploy.yml would render and what it depends
on, the KV capacity, each planned point, the client (checked against its --help or not) and its
command lines, the tuning search's first trial and candidates (roles/sglang_benchmark/tasks/plan.yml).
Python rather than one Jinja expression over the plan's results."""
from __future__ import annotations

import json

# (the fields of a planned point the plan shows, in the plan's order)
POINT_FIELDS = ("max_concurrency", "repeat", "status", "num_prompts", "over_capacity", "capacity_point")


def plan_lines(view):
    """The lines for view: host, server_plan (the server role's sglang_server_plan: script, text,
    notes), info (sglang_plan_info's result), client (sglang_bench action=check's result, {} when not
    checked), points (bench_store action=plan's points of this host), argv (sglang_bench action=argv's
    loop results), input_len and output_len."""
    server, info, client = view["server_plan"], view["info"], view.get("client") or {}
    lines = [f"{view['host']}: the plan (no host was contacted)",
             f"== launch script {server['script']} (as deploy.yml renders it) =="]
    lines += server["text"].splitlines()
    lines += [f"depends on the host: {note}" for note in server["notes"]]
    lines.append(f"== benchmark: KV cache {info['kv_tokens']} tokens ({info['kv_source']}) = {info['kv_capacity']} "
                 f"requests of {int(view['input_len']) + int(view['output_len'])} tokens ==")
    lines += ["point " + json.dumps({k: v for k, v in point.items() if k in POINT_FIELDS}) for point in view["points"]]
    if "module" in client:
        lines.append(f"client {client['module']} (SGLang {client.get('client_version') or '?'}, "
                     f"{info['client_python']}): its --help takes every flag")
    else:
        lines.append(f"client {info['client_module']}: NOT checked against its --help ({info['client_warning']})")
    lines += [result["cmd"] for result in view["argv"]]
    lines.append(f"== tuning search (tune.yml -e tune_search=true): first trial {json.dumps(info['search_first'])} ==")
    lines += [f"candidates {name}: {json.dumps(values)}" for name, values in info["search_candidates"].items()]
    return lines


class FilterModule:
    def filters(self):
        return {"sglang_benchmark_plan_lines": plan_lines}
