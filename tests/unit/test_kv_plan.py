"""Sweep planning from the KV cache (DESIGN.md, "Sweep planning")."""
import pytest
from ansible.module_utils import kv_plan


def test_capacity_of_the_reference_server():
    assert kv_plan.capacity(495488, 128, 128) == 1935


def test_capacity_floors_and_refuses_nonsense():
    assert kv_plan.capacity(1000, 100, 150) == 4  # 1000 / 250 exactly
    assert kv_plan.capacity(999, 100, 150) == 3
    with pytest.raises(ValueError, match="max_total_num_tokens"):
        kv_plan.capacity(0, 128, 128)
    with pytest.raises(ValueError, match="input_len and output_len"):
        kv_plan.capacity(495488, 128, -1)


def test_resolve_max_running_requests():
    assert kv_plan.resolve_max_running_requests("auto", 1935) == 1935
    assert kv_plan.resolve_max_running_requests(" AUTO ", 1935) == 1935
    assert kv_plan.resolve_max_running_requests(2048, 1935) == 2048
    assert kv_plan.resolve_max_running_requests("1024", 1935) == 1024
    with pytest.raises(ValueError, match="needs the KV capacity"):
        kv_plan.resolve_max_running_requests("auto", None)
    with pytest.raises(ValueError, match="'auto' or a positive integer, got 'lots'"):
        kv_plan.resolve_max_running_requests("lots", 1935)
    with pytest.raises(ValueError, match="got True"):
        kv_plan.resolve_max_running_requests(True, 1935)


def test_plan_points_marks_over_capacity_and_sets_num_prompts():
    points = kv_plan.plan_points([2048, 256, 3072, 256], 1935)
    assert [p["max_concurrency"] for p in points] == [256, 2048, 3072]
    assert [p["num_prompts"] for p in points] == [1280, 10240, 15360]
    assert [p["status"] for p in points] == ["planned", "over_capacity", "over_capacity"]
    assert [p["over_capacity"] for p in points] == [False, True, True]


def test_plan_points_runs_over_capacity_only_when_asked():
    points = kv_plan.plan_points([1935, 1936], 1935, include_over_capacity=True)
    assert [(p["status"], p["over_capacity"]) for p in points] == [
        ("planned", False), ("planned", True)]


def test_plan_points_fixed_num_prompts_factor_and_unknown_capacity():
    points = kv_plan.plan_points([4, 8], None, num_prompts=100)
    assert [(p["num_prompts"], p["status"]) for p in points] == [(100, "planned"), (100, "planned")]
    assert kv_plan.plan_points([4], 10, prompts_factor=10)[0]["num_prompts"] == 40


@pytest.mark.parametrize("bad", [[], None, [0], [256, -1], ["256"], [True], "256"])
def test_validate_plan_bad_concurrencies_names_the_variable(bad):
    with pytest.raises(ValueError) as err:
        kv_plan.validate_plan(bad)
    message = str(err.value)
    assert message.startswith("sglang_benchmark_concurrencies must be a non-empty list")
    assert "sglang_benchmark_concurrencies: [256, 512, 1024, 2048]" in message


def test_validate_plan_num_prompts_below_concurrency():
    with pytest.raises(ValueError) as err:
        kv_plan.validate_plan([256, 2048], num_prompts=1000)
    message = str(err.value)
    assert "sglang_benchmark_num_prompts (1000) is below the largest concurrency (2048)" in message
    assert "at least 2048" in message and "5 x concurrency = 10240" in message
    kv_plan.validate_plan([256, 2048], num_prompts=2048)  # enough: no error


def test_validate_plan_lengths_longer_than_context():
    with pytest.raises(ValueError) as err:
        kv_plan.validate_plan([8], input_len=4000, output_len=200, context_len=4096)
    message = str(err.value)
    assert "sglang_benchmark_input_len (4000) + sglang_benchmark_output_len (200)" in message
    assert "4200 tokens is longer than the model's context length (4096)" in message
    kv_plan.validate_plan([8], input_len=3896, output_len=200, context_len=4096)


@pytest.mark.parametrize("field", ["input_len", "output_len"])
def test_validate_plan_non_positive_length_names_it(field):
    with pytest.raises(ValueError, match=f"sglang_benchmark_{field} must be a positive"):
        kv_plan.validate_plan([8], **{field: 0})


def test_plateau_threshold_from_the_reference_table():
    # tuned server, output tok/s: 1,631 at 1024 -> 2,095 at 2048 -> 2,062 at 3072
    assert kv_plan.plateau(1631, 2095) is False
    assert kv_plan.plateau(2095, 2062) is True
    assert kv_plan.plateau(1000, 1029) is True   # +2.9% < 3%
    assert kv_plan.plateau(1000, 1030) is False  # +3.0% is a gain
    assert kv_plan.plateau(1000, 1040, threshold=0.05) is True
    assert kv_plan.plateau(None, 1000) is False and kv_plan.plateau(0, 1000) is False


def test_plan_signature_is_stable_and_sensitive():
    a = {"concurrencies": [256, 512], "input_len": 128, "profiles": {"x": {"a": 1, "b": 2}}}
    b = {"profiles": {"x": {"b": 2, "a": 1}}, "input_len": 128, "concurrencies": [256, 512]}
    assert kv_plan.plan_signature(a) == kv_plan.plan_signature(b)
    assert len(kv_plan.plan_signature(a)) == 16
    changed = dict(a, input_len=256)
    assert kv_plan.plan_signature(changed) != kv_plan.plan_signature(a)
    # Pinned: the same plan must hash the same in every process and release,
    # or every resumed run would be refused.
    assert kv_plan.plan_signature(a) == "a446474b7286f47f"
