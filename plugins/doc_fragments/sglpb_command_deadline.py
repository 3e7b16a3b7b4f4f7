"""How long a command a GPU module runs on the host may take (module_utils/host_command.py):
gpu_facts and gpu_health."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  command_deadline:
    description:
      - Seconds each command the module runs (nvidia-smi; gpu_health also C(dmesg), C(journalctl -k)
        and C(df)) may take before it is stopped. A GPU that has fallen off the bus makes
        nvidia-smi hang in the kernel. gpu_facts then fails saying so; gpu_health reports that
        check as not read.
    type: int
    default: 60
"""
