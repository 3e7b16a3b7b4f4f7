"""The play's hosts as the benchmark modules take them (module_utils/fleet.py PLAY_HOSTS_SPEC):
bench_store and bench_report document play_hosts' description themselves, its fields here."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  play_hosts:
    type: dict
    suboptions:
      all:
        description: Every host the play started with, C(ansible_play_hosts_all).
        type: list
        elements: str
        required: true
      active:
        description: The hosts still in the play, C(ansible_play_hosts).
        type: list
        elements: str
        required: true
      rank0:
        description:
          - Per host, C(sglang_server_multinode.is_rank0) (null for a single-node server); a
            multi-node server's ranks >= 1 leave the play on purpose and are not missing.
        type: dict
        default: {}
"""
