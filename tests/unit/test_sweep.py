"""Sweep planning from the KV cache (module_utils/sweep.py; docs/architecture.md, "The sweep")."""
import pytest
from ansible.module_utils import sweep


def test_capacity_of_the_reference_server():
    assert sweep.capacity(495488, 128, 128) == 1935


def test_capacity_floors_and_refuses_nonsense():
    assert sweep.capacity(1000, 100, 150) == 4  # 1000 / 250 exactly
    assert sweep.capacity(999, 100, 150) == 3
    with pytest.raises(ValueError, match="max_total_num_tokens"):
        sweep.capacity(0, 128, 128)
    with pytest.raises(ValueError, match="input_len and output_len"):
        sweep.capacity(495488, 128, -1)


REFERENCE_ARGS = {"model-path": "lukealonso/GLM-5-NVFP4", "tp-size": 8, "mem-fraction-static": 0.92,
                  "disable-cuda-graph": True, "enable-metrics": False, "log-level": None,
                  "max-running-requests": "auto", "num-continuous-decode-steps": 8}


def test_auto_resolves_to_the_kv_capacity_in_requests():
    # 495,488 KV tokens of the reference VM / 256 tokens a request = 1,935 requests, below the
    # 2,048 that SGLang 0.5.10.post1 chose itself there (min(clamp(495488 / 202752 x 512, 2048,
    # 4096), 495488 // 2))
    result = sweep.resolve_server_args(REFERENCE_ARGS, 495488, 256, 2048)
    assert result["args"] == {"model-path": "lukealonso/GLM-5-NVFP4", "tp-size": 8, "mem-fraction-static": 0.92,
                              "disable-cuda-graph": True, "max-running-requests": 1935,
                              "num-continuous-decode-steps": 8}
    assert list(result["args"]) == ["model-path", "tp-size", "mem-fraction-static", "disable-cuda-graph",
                                    "max-running-requests", "num-continuous-decode-steps"]
    assert result["capacity"] == 1935 and result["auto"] is True and result["auto_pending"] is False
    assert sweep.resolve_server_args(REFERENCE_ARGS, "495488", "512", "2048")["args"]["max-running-requests"] == 967


def test_auto_stays_within_the_limit_the_engine_chose_itself():
    """The real H200 with SGLang 0.5.11 (tests/fixtures/real-sglang-0.5.11/): a KV pool of
    9,099,668 tokens is 35,545 requests of 256, where SGLang itself chose 4,096: auto asks 4,096."""
    result = sweep.resolve_server_args({"max-running-requests": "auto"}, 9099668, 256, 4096)
    assert result["capacity"] == 35545 and result["args"] == {"max-running-requests": 4096}


@pytest.mark.parametrize(("kv_tokens", "engine_limit"), [(None, 2048), ("", 2048), (0, 2048), ("None", 2048),
                                                        (495488, None), (495488, "")])
def test_auto_is_left_out_until_the_capacity_and_the_engines_limit_are_known(kv_tokens, engine_limit):
    result = sweep.resolve_server_args(REFERENCE_ARGS, kv_tokens, 256, engine_limit)
    assert "max-running-requests" not in result["args"]
    assert result["args"]["num-continuous-decode-steps"] == 8
    assert result["auto_pending"] is True
    assert result["capacity"] == (1935 if kv_tokens == 495488 else None)


def test_a_number_stays_and_the_capacity_is_still_reported():
    args = {**REFERENCE_ARGS, "max-running-requests": 2048}
    result = sweep.resolve_server_args(args, 495488, 256)
    assert result["args"]["max-running-requests"] == 2048
    assert result["capacity"] == 1935 and result["auto"] is False and result["auto_pending"] is False
    assert sweep.resolve_server_args({}, None, 256) == {"args": {}, "capacity": None, "auto": False,
                                                        "auto_pending": False}
    # 0 is a value, not a dropped flag
    assert sweep.resolve_server_args({"cuda-graph-max-bs": 0}, None, 256)["args"] == {"cuda-graph-max-bs": 0}


def test_resolve_refuses_bad_input_naming_the_variable():
    with pytest.raises(ValueError, match="sglang_server_auto_request_tokens must be a positive integer, got 0"):
        sweep.resolve_server_args(REFERENCE_ARGS, 495488, 0)
    with pytest.raises(ValueError, match="sglang_server_args .* must be a dict"):
        sweep.resolve_server_args(["tp-size", 8], 495488, 256)
    with pytest.raises(ValueError, match="holds no request of 256 tokens; lower sglang_server_auto_request_tokens"):
        sweep.resolve_server_args(REFERENCE_ARGS, 200, 256)


def test_plan_finds_the_wall_of_the_reference_vm():
    # 495,488 KV tokens / (128 + 128) = 1,935 requests: the capacity itself and 2048 run.
    points = sweep.plan_points([256, 512, 1024, 2048], 1935)
    assert [(p["max_concurrency"], p["status"]) for p in points] == [
        (256, "planned"), (512, "planned"), (1024, "planned"), (1935, "planned"), (2048, "planned")]
    assert [p["capacity_point"] for p in points] == [False, False, False, True, False]
    assert [p["over_capacity"] for p in points] == [False, False, False, False, True]


def test_plan_points_marks_over_capacity_and_sets_num_prompts():
    points = sweep.plan_points([2048, 256, 3072, 256], 1935)
    assert [p["max_concurrency"] for p in points] == [256, 1935, 2048, 3072]
    assert [p["num_prompts"] for p in points] == [1280, 9675, 10240, 15360]
    assert [p["status"] for p in points] == ["planned", "planned", "planned", "over_capacity"]
    assert [p["over_capacity"] for p in points] == [False, False, True, True]


def test_plan_points_runs_every_over_capacity_point_only_when_asked():
    points = sweep.plan_points([1935, 1936, 4000], 1935, include_over_capacity=True)
    assert [(p["status"], p["over_capacity"]) for p in points] == [
        ("planned", False), ("planned", True), ("planned", True)]
    no_cap = sweep.plan_points([256, 4000], 1935, capacity_point=False)
    assert [(p["max_concurrency"], p["status"]) for p in no_cap] == [(256, "planned"), (4000, "planned")]
    below = sweep.plan_points([256, 512], 1935)  # the capacity is beyond the sweep: nothing added
    assert [p["max_concurrency"] for p in below] == [256, 512]


def test_plan_points_fixed_num_prompts_factor_and_unknown_capacity():
    points = sweep.plan_points([4, 8], None, num_prompts=100)
    assert [(p["num_prompts"], p["status"]) for p in points] == [(100, "planned"), (100, "planned")]
    assert sweep.plan_points([4], 10, prompts_factor=10)[0]["num_prompts"] == 40


@pytest.mark.parametrize("bad", [[], None, [0], [256, -1], ["256"], [True], "256"])
def test_validate_plan_bad_concurrencies_names_the_variable(bad):
    with pytest.raises(ValueError) as err:
        sweep.validate_plan(bad)
    message = str(err.value)
    assert message.startswith("sglang_benchmark_concurrencies must be a non-empty list")
    assert "sglang_benchmark_concurrencies: [256, 512, 1024, 2048]" in message


def test_validate_plan_num_prompts_below_concurrency():
    with pytest.raises(ValueError) as err:
        sweep.validate_plan([256, 2048], num_prompts=1000)
    message = str(err.value)
    assert "sglang_benchmark_num_prompts (1000) is below the largest concurrency (2048)" in message
    assert "at least 2048" in message and "5 x concurrency = 10240" in message
    sweep.validate_plan([256, 2048], num_prompts=2048)  # enough: no error


def test_validate_plan_lengths_longer_than_context():
    with pytest.raises(ValueError) as err:
        sweep.validate_plan([8], input_len=4000, output_len=200, context_len=4096)
    message = str(err.value)
    assert "sglang_benchmark_input_len (4000) + sglang_benchmark_output_len (200)" in message
    assert "4200 tokens is longer than the model's context length (4096)" in message
    sweep.validate_plan([8], input_len=3896, output_len=200, context_len=4096)


@pytest.mark.parametrize("field", ["input_len", "output_len"])
def test_validate_plan_non_positive_length_names_it(field):
    with pytest.raises(ValueError, match=f"sglang_benchmark_{field} must be a positive"):
        sweep.validate_plan([8], **{field: 0})


def test_plateau_threshold_from_the_reference_table():
    # tuned server, output tok/s: 1,631 at 1024 -> 2,095 at 2048 -> 2,062 at 3072
    assert sweep.plateau(1631, 2095) is False
    assert sweep.plateau(2095, 2062) is True
    assert sweep.plateau(1000, 1029) is True   # +2.9% < 3%
    assert sweep.plateau(1000, 1030) is False  # +3.0% is a gain
    assert sweep.plateau(1000, 1040, threshold=0.05) is True
    assert sweep.plateau(None, 1000) is False and sweep.plateau(0, 1000) is False


def test_plan_signature_is_stable_and_sensitive():
    a = {"concurrencies": [256, 512], "input_len": 128, "profiles": {"x": {"a": 1, "b": 2}}}
    b = {"profiles": {"x": {"b": 2, "a": 1}}, "input_len": 128, "concurrencies": [256, 512]}
    assert sweep.plan_signature(a) == sweep.plan_signature(b)
    assert len(sweep.plan_signature(a)) == 16
    changed = dict(a, input_len=256)
    assert sweep.plan_signature(changed) != sweep.plan_signature(a)
    # Pinned: the same plan must hash the same in every process and release,
    # or every resumed run would be refused.
    assert sweep.plan_signature(a) == "a446474b7286f47f"


def test_one_median_for_odd_and_even_repeats():
    assert sweep.median([3, 1, 2]) == 2
    assert sweep.median([1640, 1600, 1700, 1500]) == 1620  # the middle pair's mean
    assert sweep.median([]) is None and sweep.median([None, 5]) == 5


def rec(c, total, profile="tuned", host="h1", repeat=0, status="ok", out=None):
    return {"host": host, "profile": profile, "max_concurrency": c, "repeat": repeat, "status": status,
            "total_throughput": total, "output_throughput": out if out is not None else (total / 2 if total else None)}


def test_sweep_state_stops_at_a_plateau_after_the_last_repeat():
    records = [rec(256, 1410), rec(512, 2212), rec(1024, 3262), rec(2048, 4190)]
    assert not sweep.sweep_state(records, "h1", "tuned", {"max_concurrency": 2048, "repeat": 0})["stop"]
    records.append(rec(3072, 4124))
    state = sweep.sweep_state(records, "h1", "tuned", {"max_concurrency": 3072, "repeat": 0, "last_repeat": True})
    assert state["stop"] and "plateau" in state["reason"] and state["peak_concurrency"] == 2048
    # not before the last repeat, and never with the threshold off
    assert not sweep.sweep_state(records, "h1", "tuned", {"max_concurrency": 3072, "last_repeat": False})["stop"]
    assert not sweep.sweep_state(records, "h1", "tuned", {"max_concurrency": 3072}, threshold=None)["stop"]


def test_sweep_state_medians_over_repeats_and_the_floor_of_another_profile():
    records = [rec(128, 1000, repeat=0), rec(128, 1000, repeat=1), rec(256, 1010, repeat=0), rec(256, 1500, repeat=1)]
    # median at 256 = 1255: +25%, no plateau
    assert not sweep.sweep_state(records, "h1", "tuned", {"max_concurrency": 256, "repeat": 1})["stop"]
    # baseline plateaus at 256, but tuned peaked at 256: baseline sweeps on to 256 at least
    base = [rec(64, 500, "baseline"), rec(128, 505, "baseline")]
    state = sweep.sweep_state(records + base, "h1", "baseline", {"max_concurrency": 128})
    assert not state["stop"]
    assert sweep.sweep_state(base, "h1", "baseline", {"max_concurrency": 128})["stop"]


REFERENCE_PLAN = (256, 512, 1024, 1935, 2048)  # [256, 512, 1024, 2048] with the capacity point


def reference_baseline(upto=2048):
    """The reference's baseline (max-running-requests 1024): flat from 1024 on."""
    total = {256: 1410, 512: 2212, 1024: 3262, 1935: 3270, 2048: 3268}
    return [rec(c, total[c], "baseline", repeat=r) for c in REFERENCE_PLAN if c <= upto for r in range(3)]


def test_a_compared_profile_does_not_stop_while_another_has_yet_to_sweep():
    # The reference story: the baseline plateaus at 1935 (+0.2% over 1024); alone it stops
    # there, but in a comparison with tuned still to sweep, tuned may run 2048, so it goes on.
    records = reference_baseline(upto=1935)
    point = {"max_concurrency": 1935, "repeat": 2, "last_repeat": True}
    assert sweep.sweep_state(records, "h1", "baseline", point)["stop"]
    assert sweep.compare_floor(records, "h1", "baseline", ["baseline", "tuned"]) == float("inf")
    state = sweep.sweep_state(records, "h1", "baseline", point, compared=["baseline", "tuned"])
    assert not state["stop"] and state["reason"] is None
    # a comparison of one profile, or none: the plateau stop as ever
    assert sweep.sweep_state(records, "h1", "baseline", point, compared=["baseline"])["stop"]


def test_the_last_compared_profile_runs_every_point_the_others_ran_then_may_stop():
    base = reference_baseline()
    tuned = [rec(c, t, "tuned") for c, t in ((256, 1410), (512, 2212), (1024, 3262), (1935, 3275))]
    compared = ["baseline", "tuned"]
    # tuned plateaus at 1935, but the baseline ran 2048: tuned must too
    assert sweep.compare_floor(base + tuned, "h1", "tuned", compared) == 2048
    point = {"max_concurrency": 1935, "repeat": 0}
    assert not sweep.sweep_state(base + tuned, "h1", "tuned", point, compared=compared)["stop"]
    # at 2048, the highest point any profile ran, its plateau stops it (nothing beyond is needed)
    more = tuned + [rec(2048, 3280, "tuned"), rec(4096, 3290, "tuned")]
    assert sweep.sweep_state(base + more, "h1", "tuned", {"max_concurrency": 4096, "repeat": 0},
                             compared=compared)["stop"]
    # a skipped or over-capacity record of another profile is no point it ran; another host's neither
    other = [rec(4096, None, "baseline", status="skipped"), rec(8192, 9000, "baseline", host="h2")]
    assert sweep.compare_floor(base + other + tuned, "h1", "tuned", compared) == 2048


def test_a_later_profile_plans_the_points_another_ran_within_its_capacity():
    # baseline's capacity point 1935 ran; tuned (a larger KV pool, capacity 2300) plans it too;
    # a point another ran above this profile's capacity is left to the over-capacity rule
    base = reference_baseline() + [rec(3000, 3300, "baseline", status="failed")]
    assert sweep.compare_concurrencies([256, 512, 1024, 2048], base, "h1", "tuned", 2300) == [
        256, 512, 1024, 1935, 2048]
    assert sweep.compare_concurrencies([256, 2048], base, "h1", "tuned", None) == [
        256, 512, 1024, 1935, 2048, 3000]
    assert sweep.compare_concurrencies([256, 2048], base, "h2", "tuned", 2300) == [256, 2048]
    # (its own records are no other profile's)
    assert sweep.compare_concurrencies([256], base, "h1", "baseline", 2300) == [256]


def test_sweep_state_stop_on_failure():
    records = [rec(256, 1000), rec(512, None, status="failed")]
    point = {"max_concurrency": 512, "repeat": 0}
    assert sweep.sweep_state(records, "h1", "tuned", point, stop_on_failure=True)["stop"]
    assert not sweep.sweep_state(records, "h1", "tuned", point)["stop"]


def test_best_profile_is_the_highest_peak_and_the_common_top_is_compared():
    def r(profile, c, out, status="ok"):
        return rec(c, None, profile, status=status, out=out)
    records = [r("baseline", 256, 705), r("baseline", 512, 1106), r("baseline", 1024, 1601),
               r("baseline", 2048, 1640), r("tuned", 256, 705), r("tuned", 512, 1111),
               r("tuned", 1024, 1631), r("tuned", 2048, 2095), r("tuned", 3072, 2062),
               rec(4096, None, "tuned", status="failed")]
    got = sweep.pick_best(records, ["baseline", "tuned"])
    assert got["best"] == "tuned" and got["points"] == 9
    h1 = got["hosts"]["h1"]
    assert h1["profiles"]["tuned"]["peak_concurrency"] == 2048 and h1["profiles"]["baseline"]["points"] == 4
    assert h1["common_top"] == {"max_concurrency": 2048, "best": "tuned",
                                "output_throughput": {"baseline": 1640.0, "tuned": 2095.0}}
    assert sweep.pick_best([])["best"] is None


def test_standin_pace_is_the_measured_share_of_the_models_prediction():
    assert sweep.standin_pace(7200.0, 8000.0) == 0.9
    assert sweep.standin_pace(7200.0, None) is None  # a real server: no prediction
    assert sweep.standin_pace(None, 8000.0) is None and sweep.standin_pace(1.0, 0) is None


def test_a_point_below_the_pace_floor_did_not_keep_pace():
    assert sweep.kept_pace({"standin_pace": 0.95})
    assert not sweep.kept_pace({"standin_pace": 0.72})
    assert sweep.kept_pace({"standin_pace": 0.8})  # a quiet machine's heaviest demo point
    assert sweep.kept_pace({})  # a real server's point
