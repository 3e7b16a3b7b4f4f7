"""The nvidia-smi a GPU module runs: gpu_facts, gpu_health and gpu_telemetry."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  nvidia_smi:
    description: The nvidia-smi to run, a name looked up on PATH or an absolute path.
    type: str
    default: nvidia-smi
"""
