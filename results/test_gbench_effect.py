"""results/gbench_effect.py (make gbench-effect): the comparison of two ubench
builds, on synthetic runs with known answers, and one short real run."""

from pathlib import Path

import pytest

from results import gbench_effect

pytestmark = pytest.mark.serial  # times ubench against itself (conftest.py)

REPO = Path(__file__).resolve().parent.parent
UBENCH = REPO / "build" / "raplbench-ubench"


def gb_json(bench, reps):
    """Google Benchmark JSON of one benchmark: reps = [(real_time ns, latency counter)]."""
    return {"context": {}, "benchmarks": [
        {"run_name": bench, "run_type": "iteration", "repetition_index": i, "iterations": 1000 + i,
         "real_time": rt, "time_unit": "ns", "latency": c} for i, (rt, c) in enumerate(reps)]
        + [{"run_name": bench, "run_type": "aggregate", "aggregate_name": "median",
            "real_time": 0.0, "time_unit": "ns"}]}


def plan_row(bench, metric="latency", status="ok"):
    return {"id": bench, "metric": metric, "status": status}


def test_a_run_gives_the_median_of_each_figure_and_the_fewest_iterations():
    gb = gb_json("uinsn/nop", [(10.0, 0.3), (30.0, 0.1), (20.0, 0.2)])
    got = gbench_effect.run_medians(gb, [plan_row("uinsn/nop")])
    assert got == {"uinsn/nop": {"latency": 0.2, "real_time": 20.0, "iterations": 1000}}
    for run in gb["benchmarks"]:
        run.pop("latency", None)  # a benchmark timed by Google Benchmark's clock alone
    assert gbench_effect.run_medians(gb, [plan_row("uinsn/nop")]) == {
        "uinsn/nop": {"real_time": 20.0, "iterations": 1000}}


def test_unavailable_and_failed_benchmarks_are_left_out():
    gb = gb_json("perf/read", [(5.0, 0.0)])
    gb["benchmarks"][0]["error_occurred"] = True
    rows = [plan_row("perf/read"), plan_row("x", status="unavailable")]
    assert gbench_effect.run_medians(gb, rows) == {}


def runs(values, bench="b", figure="real_time"):
    return [{bench: {figure: v, "iterations": 100}} for v in values]


def test_ratios_on_both_sides_of_one_are_within_noise():
    [row] = gbench_effect.compare(runs([100, 104, 98]), runs([101, 99, 103]))
    assert row["verdict"] == "within noise"
    assert row["a_median"] == 100 and row["b_median"] == 101
    assert row["ratio_min"] < 1 < row["ratio_max"]
    assert row["pairs"] == 3 and row["iterations"] == 100


def test_a_shift_larger_than_each_builds_spread_is_beyond_noise():
    [row] = gbench_effect.compare(runs([100, 101, 100.5]), runs([80, 81, 80.4]))
    assert row["verdict"] == "B faster by 20.0%"
    [row] = gbench_effect.compare(runs([100, 101, 100.5]), runs([110, 111, 110.4]))
    assert row["verdict"].startswith("B slower by ")


def test_a_shift_inside_the_run_to_run_spread_is_within_noise():
    # every pair says B is faster, but by less than A's own runs differ
    [row] = gbench_effect.compare(runs([100, 130, 115]), runs([95, 125, 110]))
    assert all(r < 1 for r in (95 / 100, 125 / 130, 110 / 115))
    assert row["verdict"] == "within noise"


def test_a_benchmark_missing_from_one_run_is_not_compared():
    assert gbench_effect.compare(runs([100, 100, 100]), runs([100, 100]) + [{}]) == []


def test_a_figure_without_a_positive_median_has_no_ratio():
    assert gbench_effect.compare(runs([0.1, -0.01]), runs([0.1, 0.1])) == []


def test_the_table_names_both_builds_and_every_figure():
    rows = gbench_effect.compare(runs([100, 104]), runs([101, 99]))
    text = gbench_effect.format_table(rows, "A: debian", "B: ndebug")
    assert text.startswith("A = A: debian\nB = B: ndebug\n")
    assert "| b | real_time | 102 ns | 100 ns |" in text
    assert "within noise" in text and "2 pairs" in text


def test_a_real_comparison_of_ubench_with_itself(capsys):
    if not UBENCH.exists():
        pytest.skip(f"{UBENCH} not built (make build)")
    # rdtsc, not nop: a nop's latency (two timings' difference, 0.1 ns) can
    # come out at 0 or below over 2 short repetitions, and such a row has no
    # ratio (compare leaves it out); that failed a CI run
    code = gbench_effect.main(["--a", str(UBENCH), "--b", str(UBENCH), "--pairs", "2",
                               "--repetitions", "2", "--min-time", "0.001",
                               "--filter", "^uinsn/rdtsc/"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "| uinsn/rdtsc/@0->0 | latency |" in out and "| uinsn/rdtsc/@0->0 | real_time |" in out
    assert "both builds link the same library" in err


def test_bad_arguments_exit_2(tmp_path):
    with pytest.raises(SystemExit) as e:
        gbench_effect.main(["--a", str(tmp_path / "none"), "--b", str(tmp_path / "none")])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        gbench_effect.main(["--a", "x", "--b", "x", "--pairs", "1"])
    assert e.value.code == 2
