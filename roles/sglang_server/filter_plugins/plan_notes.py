"""Filter sglang_server_plan_notes: what playbooks/plan.yml's launch script depends on that only
the host can tell, one line each (roles/sglang_server/tasks/plan.yml). Python rather than one
Jinja expression over the role's variables: each note is a branch that reads as one."""
from __future__ import annotations

NCCL_SET_BY_PREFLIGHT = ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE")


def plan_notes(facts):
    """The notes for facts: nccl_known (the preflight's NCCL settings were given), env
    (sglang_server_env), environment (sglang_server_environment, the launch script's), cuda_version,
    auto_pending and capacity (sglang_launch_args_info's), config_args (sglang_server_config_args:
    the args --config carries), secrets_config (its path) and nnodes."""
    notes = []
    if not facts["nccl_known"]:
        own = [name for name in NCCL_SET_BY_PREFLIGHT if name in (facts.get("env") or {})]
        notes.append("NCCL from the preflight: not known before it reads the host. It adds NCCL_P2P_DISABLE=1 when "
                     "the host has more than one GPU and no P2P between them (inside a VM), and NCCL_IB_DISABLE=1 "
                     "without InfiniBand"
                     + (f" (sglang_server_env sets {', '.join(own)} itself here)" if own else "")
                     + "; give a preflight's GPU facts with -e @FILE holding plan_gpu_facts to render them")
    cuda_home = (facts.get("environment") or {}).get("CUDA_HOME")
    if cuda_home is not None:
        notes.append(f"CUDA_HOME {cuda_home}: where the cuda_toolkit role installs CUDA {facts['cuda_version']} "
                     "(deploy.yml checks the driver for it on the host, and installs it there)")
    if facts.get("auto_pending"):
        notes.append("max-running-requests: auto is left out until the first start reports the engine's own limit "
                     f"(it then runs with min({facts.get('capacity')}, that limit))")
    if facts.get("config_args"):
        notes.append(f"--api-key reaches the server in {facts['secrets_config']} (--config), never on this command line")
    nnodes = int(facts.get("nnodes") or 1)
    if nnodes > 1:
        notes.append(f"multi-node (sglang_server_nnodes {nnodes}): --nnodes, --node-rank, --dist-init-addr and "
                     "NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME come from the preflight of every node, not shown here")
    return notes


class FilterModule:
    def filters(self):
        return {"sglang_server_plan_notes": plan_notes}
