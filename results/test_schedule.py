"""The schedule both latency harnesses time every row by."""

import pytest

from results import schedule


@pytest.mark.parametrize("quick", [True, False])
def test_both_harnesses_time_rows_on_one_schedule(quick):
    """The same blocks in both harnesses (agreement.py's legend relies on it):
    as many Google Benchmark repetitions as rbench rounds in every leg, as
    long, each after the same warm-up, interleaved across rows."""
    s = schedule.schedule(quick)
    assert s.blocks >= 10
    for blocks in (None, *s.leg_blocks()):
        args = dict(a.split("=", 1) for a in schedule.gbench_args(quick, blocks))
        env = schedule.criterion_env(quick, blocks)
        assert int(args["--benchmark_repetitions"]) == int(env["RAPLBENCH_ROUNDS"]) \
            == (blocks or s.blocks)
        assert float(env["RAPLBENCH_BLOCK_S"]) == s.block_s
        assert float(args["--benchmark_min_time"]) * schedule.GBENCH_OVERSHOOT == \
            pytest.approx(s.block_s, rel=1e-5)
        assert float(args["--raplbench_warmup"]) == float(env["RAPLBENCH_WARMUP_S"]) == s.warmup_s
        # one warm-up per block, as rbench's; none of Google Benchmark's own on top
        assert float(args["--benchmark_min_warmup_time"]) == 0
        assert args["--benchmark_enable_random_interleaving"] == "true"
        # a rate row's window: at least 50 ticks of the 1 kHz program
        assert float(args["--raplbench_rate_window"]) == s.rate_window_s >= 0.05
        assert (env.get("RAPLBENCH_QUICK") == "1") == quick


@pytest.mark.parametrize("quick", [True, False])
def test_the_legs_share_out_every_block(quick):
    s = schedule.schedule(quick)
    # both orders at least once (g c, c g, g c); a full run more often
    assert s.legs >= (3 if quick else 5)
    assert sum(s.leg_blocks()) == s.blocks and min(s.leg_blocks()) >= 1
    eleven = schedule.Schedule(blocks=11, block_s=1, warmup_s=0, legs=3, rate_window_s=0.1)
    assert eleven.leg_blocks() == [4, 4, 3]


def test_every_step_has_a_budget_and_a_full_runs_steps_fit_in_ten_minutes():
    from results import bench_all  # noqa: PLC0415
    steps = [name for name, _, _ in bench_all.HARNESSES]
    full = sum(schedule.step_budget_s(name, quick=False) for name in steps)
    quick = sum(schedule.step_budget_s(name, quick=True) for name in steps)
    assert 0 < full <= 600 and 0 < quick < 60
    assert schedule.step_budget_s("no such step", quick=False) == 0


def test_a_step_says_what_it_spent_against_its_budget():
    from results.bench_all import against_budget  # noqa: PLC0415
    assert against_budget(41.23, 60, "its") == "41.2 s of its 60 s budget"
    assert against_budget(71, 60, "their") == "71.0 s: OVER their 60 s budget"
    # over as printed: 14.03 s reads 14.0 s, within 14 s; what is left reads 22.1 s
    assert against_budget(14.03, 14, "its") == "14.0 s of its 14 s budget"
    assert against_budget(22.2, 22.0929, "its") == "22.2 s: OVER its 22.1 s budget"
