"""A sweep's size as bench_store and bench_search take it (module_utils/sweep.py
SWEEP_INPUTS_SPEC, checked by check_sweep_numbers, each message naming the play's variable)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  concurrencies:
    description:
      - The sweep's concurrencies, C(sglang_benchmark_concurrencies) (bench_search - the top is the
        search's default target), a list (raw, so that a string such as C("4,8") is refused as
        one, naming the variable).
    type: raw
  num_prompts:
    description: Requests per point, C(sglang_benchmark_num_prompts); null = 5 x the concurrency. A positive integer.
    type: raw
  input_len:
    description: Input tokens per request, C(sglang_benchmark_input_len). A positive integer.
    type: raw
    default: 128
  output_len:
    description: Output tokens per request, C(sglang_benchmark_output_len). A positive integer.
    type: raw
    default: 128
"""
