"""sglang_standin: an SGLang-compatible engine for machines without GPUs.

It speaks SGLang 0.5.x's HTTP API, prints SGLang's log lines and models its
throughput, so deployment, health checks, benchmarks and failure handling can be
tested without a GPU. Standard library only.
"""

#: The SGLang release whose interface this stand-in follows, and the release it says it is
#: (and whose rules it follows) when no sglang package is installed beside it
#: (config.installed_sglang_version; --standin-sglang-version sets it).
SGLANG_VERSION = "0.5.23"
__version__ = f"{SGLANG_VERSION}+standin"
