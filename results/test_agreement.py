"""The agreement verdict on synthetic rows whose distributions are known:
blocks drawn from lognormal (or two-state) distributions with a chosen ratio
between the harnesses and a chosen scatter."""

import numpy as np
import pytest

from results import agreement
from results.agreement import AGREE, DIFFER, UNCLEAR, judge, known_cause, pairs, ratio_ci, report

NOTE = "power/energy-psys/ on CPU 0: did not change in 100 ms (97 reads): a dead counter"


def row(harness, median=None, samples=None, cpu=0, target_cpu=0, op="read", path="perf",
        stand_in=None, status="ok"):
    samples = list(samples) if samples is not None else [median] * 10
    return {"harness": harness, "path": path, "op": op, "target": "msr/tsc/", "cpu": cpu,
            "target_cpu": target_cpu, "metric": "latency", "status": status,
            "median": float(np.median(samples)) if samples else median,
            "samples": samples, "stand_in": stand_in}


def blocks(center, spread, n=10, seed=0):
    """n lognormal blocks around `center` with relative scatter `spread`."""
    return center * np.random.default_rng(seed).lognormal(0, spread, n)


def pair(ratio, spread_g, spread_c=None, n=10, seed=0, center=1000.0, **kw):
    spread_c = spread_g if spread_c is None else spread_c
    return (row("gbench", samples=blocks(center, spread_g, n, seed), **kw),
            row("criterion", samples=blocks(center * ratio, spread_c, n, seed + 1000), **kw))


@pytest.mark.parametrize("ratio", [1.0, 0.97, 1.04])
def test_tight_blocks_close_together_agree(ratio):
    v = judge(*pair(ratio, 0.01))
    assert v.kind == AGREE, v
    assert 1 / 1.1 <= v.ci[0] <= v.ratio <= v.ci[1] <= 1.1


@pytest.mark.parametrize("ratio", [1.3, 0.7, 1.16])
def test_tight_blocks_far_apart_differ_beyond_noise(ratio):
    v = judge(*pair(ratio, 0.02))
    assert v.kind == DIFFER, v
    assert v.ci[0] > 1.1 or v.ci[1] < 1 / 1.1
    assert v.ci[0] <= v.ratio <= v.ci[1]
    assert v.text().startswith(f"differ beyond noise (ratio {v.ratio:.2f}, CI ")


def test_scattered_blocks_are_too_noisy_to_tell_even_with_equal_medians():
    # a machine that drifts between two speeds 1.5x apart, seen by both harnesses
    rng = np.random.default_rng(3)
    two_states = [1000 * rng.choice([1.0, 1.5]) * rng.lognormal(0, 0.03) for _ in range(20)]
    v = judge(row("gbench", samples=two_states[:10]), row("criterion", samples=two_states[10:]))
    assert v.kind == UNCLEAR, v
    assert v.ci[0] < 1 / 1.1 or v.ci[1] > 1.1
    assert v.text() == f"noise too wide to tell (CI {v.ci[0]:.2f}–{v.ci[1]:.2f} spans 10%)"


def test_a_ratio_near_the_bound_is_not_decided_by_noise():
    # 10% apart with 5% scatter: the interval straddles 1.1
    v = judge(*pair(1.10, 0.05))
    assert v.kind == UNCLEAR and v.ci[0] < 1.1 < v.ci[1], v


def test_one_noisy_harness_is_enough_to_withhold_a_verdict():
    v = judge(*pair(1.0, 0.01, spread_c=0.3))
    assert v.kind == UNCLEAR, v


def test_fewer_than_two_blocks_cannot_be_judged():
    v = judge(row("gbench", samples=[1000.0]), row("criterion", samples=[1000.0] * 10))
    assert (v.kind, v.ci) == (UNCLEAR, None)
    assert v.text() == "noise too wide to tell (fewer than 2 blocks)"


def test_the_interval_covers_the_true_ratio_about_95_percent_of_the_time():
    # 200 pairs, true ratio of medians 1.2, 15% lognormal scatter in both
    hits = 0
    for seed in range(200):
        g = blocks(1000, 0.15, seed=seed)
        c = blocks(1200, 0.15, seed=seed + 5000)
        lo, hi = ratio_ci(g, c, resamples=1000, seed=seed)
        hits += lo <= 1.2 <= hi
    assert 0.88 <= hits / 200 <= 1.0, hits


def test_the_report_is_the_same_for_the_same_rows():
    rows = [*pair(1.2, 0.1)]
    assert report(rows, "r") == report(rows, "r")


def test_report_shows_ratio_ci_and_verdict_per_pair_and_counts():
    rows = [*pair(1.0, 0.01, op="read"), *pair(1.3, 0.01, op="group-read"),
            *pair(1.0, 0.3, op="read", cpu=1)]
    text = report(rows, "r1")
    lines = {line.split(" | ")[1] + line.split(" | ")[3]: line
             for line in text.splitlines() if line.startswith("| perf")}
    assert "| agree (within 10%) |" in lines["read0→0"]
    v = judge(*pair(1.3, 0.01, op="group-read"))
    assert f"| {v.ci[0]:.2f}–{v.ci[1]:.2f} | **differ beyond noise (ratio 1.30" in lines["group-read0→0"]
    assert lines["group-read0→0"].endswith("| **no known cause** |")
    assert "noise too wide to tell (CI " in lines["read1→0"]
    assert ("1 of 3 pairs agree within 10%; 1 differ beyond noise (0 with a known cause); "
            "1 too noisy to tell.") in text
    assert "Known causes" not in text
    assert "bootstrap" in text and "Schedule" in text  # the legend says how


def test_a_sub_10_ns_difference_names_its_measured_cause():
    rows = [*pair(1.12, 0.01, center=3.0, path="ebpf-mmap", op="load")]
    text = report(rows)
    line = next(line for line in text.splitlines() if line.startswith("| ebpf-mmap"))
    assert "**differ beyond noise" in line and line.endswith("| known cause [1] |")
    assert f"1. {agreement.KNOWN_CAUSES['loop']}" in text
    assert "load_of_a_cpu_without_a_slot_is_an_error" in text
    assert "1 differ beyond noise (1 with a known cause)" in text


def test_known_causes():
    g, c = pair(1.0, 0.01)
    assert known_cause(g, c) is None
    assert known_cause(row("gbench", 100, stand_in="a"), row("criterion", 100, stand_in="b")) == "stand-in"
    assert known_cause(row("gbench", 4.0), row("criterion", 4.4)) == "loop"
    assert known_cause(row("gbench", 4.0), row("criterion", 5.0)) is None  # more than 0.5 ns
    assert known_cause(row("gbench", 40.0), row("criterion", 50.0)) is None
    assert set(agreement.KNOWN_CAUSES) == {"stand-in", "loop"}


def test_the_run_wide_factor_is_the_median_ratio_above_10_ns():
    found = [pair(r, 0.01, op=str(i)) for i, r in enumerate([1.2, 1.3, 1.25, 0.9])]
    assert agreement.run_wide_factor(found) == pytest.approx(1.225, rel=0.02)
    assert agreement.run_wide_factor(found[:3]) is None  # too few pairs
    found.append(pair(3.0, 0.01, center=3.0, op="load"))  # a sub-10 ns pair does not count
    assert agreement.run_wide_factor(found) == pytest.approx(1.225, rel=0.02)


def test_a_shift_of_every_pair_shows_in_the_run_wide_factor_and_is_no_known_cause():
    """The harnesses take turns (results/bench_all.py), so a drift of the
    machine no longer moves one harness's rows alone: the cause "run-wide"
    that excused such a shift is gone, and a shift of every pair is shown,
    not explained."""
    rows = [r for i, ratio in enumerate([1.25, 1.24, 1.27, 1.22, 1.26, 1.7])
            for r in pair(ratio, 0.01, op=f"op{i}", seed=i)]
    text = report(rows)
    lines = [line for line in text.splitlines() if line.startswith("| perf")]
    assert all(line.endswith("| **no known cause** |") for line in lines), lines
    assert "Run-wide factor (the median ratio of the 6 pairs above 10 ns): 1.2" in text
    assert "5 of them within 10% of it. A factor far from 1 is a bias of one harness" in text


def test_pairs_only_what_both_measured():
    rows = [row("gbench", 200), row("criterion", 210), row("gbench", 300, op="group-read"),
            row("criterion", 5, path="ebpf-mmap", op="load"),
            row("criterion", 9, op="group-read", status="unavailable")]
    assert [(g["op"], c["median"]) for g, c in pairs(rows)] == [("read", 210)]


def test_no_pairs_says_so():
    assert "No path was measured by both" in report([row("gbench", 1)])


def test_frozen_pairs_are_marked_and_their_notes_listed():
    g, c = pair(1.01, 0.01, center=8189)
    for r in (g, c):
        r.update(target="power/energy-psys/", liveness="frozen", liveness_note=NOTE)
    live_g, live_c = pair(1.02, 0.01, center=400, op="group-read")
    for r in (live_g, live_c):
        r.update(liveness="live", liveness_note=None)
    text = report([g, c, live_g, live_c])
    frozen_line = next(line for line in text.splitlines() if "energy-psys" in line)
    assert frozen_line.endswith("| agree (within 10%) | **frozen counter** [a] |")
    assert _fmt_ok(g["median"]) in frozen_line  # the latency stands
    assert text.count(f"- [a] frozen counter: {NOTE}") == 1
    assert "2 of 2 pairs agree" in text


def _fmt_ok(ns):
    return agreement.fmt_ns(ns)


def test_schema_1_pairs_say_once_that_the_verdict_is_unknown():
    text = report([*pair(1.0, 0.01), *pair(1.0, 0.01, op="group-read")])
    assert text.count("verdict unknown") == 1
    assert "counter**" not in text


# ---- over several runs ---------------------------------------------------------------

def test_judge_runs_is_a_t_interval_of_the_mean_log_ratio():
    # log ratios 0, 0.1, -0.1: mean 0, sd 0.1, t(0.975, 2) = 4.3027
    v = agreement.judge_runs(np.exp([0.0, 0.1, -0.1]))
    assert v.ratio == pytest.approx(1.0)
    assert v.ci == pytest.approx((np.exp(-4.3027 * 0.1 / np.sqrt(3)),
                                  np.exp(4.3027 * 0.1 / np.sqrt(3))), rel=1e-4)
    assert v.kind == UNCLEAR  # 0.78-1.28 spans 10%
    assert agreement.judge_runs(1.02 * np.exp(np.linspace(-0.02, 0.02, 20))).kind == AGREE
    assert agreement.judge_runs(1.3 * np.exp(np.linspace(-0.02, 0.02, 20))).kind == DIFFER
    assert agreement.judge_runs([1.0]).ci is None


def test_runs_whose_blocks_disagree_can_agree_over_runs():
    """Each run's blocks are tight, but the runs' ratios scatter on both
    sides of 1 (the machine drifted between the two harness steps): one run
    says the harnesses differ, 30 runs say they agree."""
    rng = np.random.default_rng(5)
    runs = []
    for i in range(30):
        shift = float(np.exp(rng.normal(0, 0.12)))
        runs.append(list(pair(shift, 0.01, seed=i)))
    per_run = [judge(*r).kind for r in runs]
    assert per_run.count(DIFFER) >= 5
    md = agreement.report_over_runs(runs, "test")
    assert md.startswith("# Cross-harness agreement over 30 runs (test)")
    assert "| perf | read | msr/tsc/ | 0→0 | 30 |" in md
    assert "1 of 1 pairs agree within 10%" in md


def test_a_loop_sized_difference_over_runs_names_its_cause():
    runs = [[row("gbench", samples=blocks(2.5, 0.01, seed=i)),
             row("criterion", samples=blocks(2.9, 0.01, seed=100 + i))] for i in range(10)]
    md = agreement.report_over_runs(runs)
    assert "known cause [1]" in md and "1. below 10 ns per operation" in md


def test_the_command_reads_runs_and_refuses_a_bad_file(tmp_path, capsys):
    from results import rows as rowlib
    from results.test_gbench import COMMON
    dirs = []
    for i in range(3):
        run_rows = [rowlib.measured_row(COMMON, harness=h, path="perf", op="read",
                                        target="msr/tsc/", cpu=0, target_cpu=0,
                                        metric="latency", unit="ns",
                                        samples=list(blocks(700 * f, 0.01, seed=i)))
                    for h, f in (("gbench", 1.0), ("criterion", 1.01))]
        (tmp_path / f"r{i}").mkdir()
        rowlib.write_jsonl(run_rows, tmp_path / f"r{i}" / "results.jsonl")
        dirs.append(str(tmp_path / f"r{i}"))
    assert agreement.main([*dirs, "--out", str(tmp_path / "a.md")]) == 0
    out = capsys.readouterr().out
    assert "over 3 runs" in out and "1 of 1 pairs agree within 10%" in out
    assert (tmp_path / "a.md").read_text() == out
    (tmp_path / "bad.jsonl").write_text('{"schema_version": "2", "samples": [NaN]}\n')
    assert agreement.main([dirs[0], str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def _ordered_run(ratio, gbench_first, seed):
    g, c = pair(ratio, 0.01, seed=seed)
    g["parameters"], c["parameters"] = ({"step": 1}, {"step": 3}) if gbench_first else \
        ({"step": 3}, {"step": 1})
    return [g, c]


def test_an_order_effect_shows_per_order_and_averages_out():
    """The harness that runs second is 12% slower (the machine drifted
    during the runs): each order alone is off by 12%, both orders together
    agree, and the order section shows the effect with a small p value."""
    runs = [_ordered_run(1.12 if i % 2 else 1 / 1.12, bool(i % 2), i) for i in range(40)]
    md = agreement.report_over_runs(runs)
    assert "1 of 1 pairs agree within 10%" in md
    g_first, c_first, n_g, n_c, p = agreement.order_effect([tuple(r) for r in runs])
    assert (n_g, n_c) == (20, 20) and p < 1e-6
    assert g_first == pytest.approx(1.12, rel=0.02) and c_first == pytest.approx(1 / 1.12, rel=0.02)
    assert f"| perf | read | 0→0 | {g_first:.3f} (20) | {c_first:.3f} (20) | {p:.3g} |" in md


def test_without_the_recorded_order_there_is_no_order_section():
    runs = [list(pair(1.0, 0.01, seed=i)) for i in range(6)]
    assert agreement.order_effect([tuple(r) for r in runs]) is None
    assert "Order of the harness steps" not in agreement.report_over_runs(runs)
    only_one_order = [_ordered_run(1.0, True, i) for i in range(6)]
    assert agreement.order_effect([tuple(r) for r in only_one_order]) is None


def test_each_target_state_pairs_with_its_own():
    """Issue 34: a cross-CPU row in one target state is never paired with
    the other harness's row of another state."""
    states = [{**row(h, 5000.0 * (1 + (s == "busy")), cpu=1), "target_state": s}
              for h in ("gbench", "criterion") for s in ("idle", "busy")]
    got = [(g["target_state"], c["target_state"], g["median"] == c["median"])
           for g, c in pairs(states)]
    assert sorted(got) == [("busy", "busy", True), ("idle", "idle", True)]
