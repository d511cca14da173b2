"""The gate on runs shaped like a QUICK bench-all run (ci/conftest.py's
multi_path_run and sampler_and_overhead_rows): the issue's done-when, the
sampler, overhead, victim and idle rows, a whole-run shift."""

import numpy as np
import pytest

from ci import gate, gate_config, gate_report
from ci.conftest import (common, latency, multi_path_run, row_of, run_main,
                         sampler_and_overhead_rows, scaled, verdict_of, write_run)
from results import rows, stats

def test_done_when_self_passes_and_x1_5_fails_naming_the_rows(tmp_path, capsys):
    run_rows = multi_path_run(common())
    run = write_run(tmp_path / "run", run_rows)
    slower = write_run(tmp_path / "slower", [scaled(r, 1.5) for r in run_rows])
    config = ["--config", str(gate.DEFAULT_CONFIG)]  # the shipped settings, as make gate

    code, out, _ = run_main(capsys, run, run, *config)
    assert code == 0 and "✅ pass — 0 regressions, 0 improvements, 10 unchanged" in out

    code, out, err = run_main(capsys, run, slower, *config)
    assert code == 1
    verdict = verdict_of(slower)
    regressed = {r["id"] for r in verdict["rows"] if r["decision"] == "regression"}
    expected = {gate_config.row_id(r) for r in run_rows
                if r["status"] == "ok" and r["harness"] != "reference" and r["metric"] != "rate_hz"}
    assert regressed == expected
    for r in run_rows:
        if gate_config.row_id(r) in expected:
            assert f"gate: regression: {gate_report.label(r)}: +50.0%" in err
            assert f"| {gate_report.label(r)} |" in out
    # a 1.5 times higher rate is better: an improvement, not a regression
    rate = row_of(verdict, metric="rate_hz")
    assert rate["decision"] == "improvement" and not rate["fails"]
    assert verdict["counts"]["regression"] == 9 and verdict["counts"]["improvement"] == 1
    assert out.index("### ❌ Regressions (9)") < out.index("### ✅ Improvements (1)")


def test_a_run_that_drifted_as_a_whole_passes(tmp_path, capsys):
    """Issue 13: two QUICK runs of the same build failed the gate on the
    sampler's jitter, its 500 interval errors tested as independent. Now the
    sampler's rows hold windows, judged with a size and an effect size on top
    of p: a run whose timer jitter moved +60 % and whose CPU per tick moved
    +10 % as a whole, and whose overhead pairs are new draws, passes."""
    c = common()
    base = multi_path_run(c) + sampler_and_overhead_rows(c, seed=1)
    cur = [scaled(r, 1.03) for r in multi_path_run(c)] + \
        sampler_and_overhead_rows(c, seed=2, drift=1.10, jitter_drift=1.6)
    config = ["--config", str(gate.DEFAULT_CONFIG)]
    code, out, err = run_main(capsys, write_run(tmp_path / "a", base),
                              write_run(tmp_path / "b", cur), *config)
    assert code == 0, err
    verdict = verdict_of(tmp_path / "b")
    jitter = row_of(verdict, metric="jitter_us", target="msr/tsc/ @ 1000 Hz")
    assert jitter["decision"] == "unchanged" and jitter["p_value"] < 0.01  # moved, not failed


def test_the_sampler_and_overhead_rows_still_catch_a_real_change(tmp_path, capsys):
    """The same sampler rows with 3x the jitter, +8 µs CPU per tick and +10
    points of overhead: each is a regression."""
    c = common()
    base = sampler_and_overhead_rows(c, seed=1)
    cur = sampler_and_overhead_rows(c, seed=2, jitter_drift=3.5)
    for r in cur:
        if r["metric"] == "cpu_us_per_sample" or r["metric"] == "overhead_pct":
            add = 8.0 if r["metric"] == "cpu_us_per_sample" else 10.0
            samples = [x + add for x in r["samples"]]
            r.update(samples=samples, **stats.summarize(samples))
    code, _, _ = run_main(capsys, write_run(tmp_path / "a", base),
                          write_run(tmp_path / "b", cur), "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1
    verdict = verdict_of(tmp_path / "b")
    regressed = {(gate_config.table.shown_target(r), r["metric"]) for r in verdict["rows"]
                 if r["decision"] == "regression"}
    # the sampler's jitter, its cost above the null timer and the overhead;
    # the null timer and the sampler's raw CPU per tick are the machine's
    # floor: compared, not gated
    assert regressed == {("msr/tsc/ @ 1000 Hz", "jitter_us"),
                         ("above null: msr/tsc/ @ 1000 Hz", "cpu_us_per_sample"),
                         ("stress-ng ..., fixed work pinned to CPU 1: wall time", "overhead_pct")}
    floor = {(gate_config.table.shown_target(r), r["metric"]) for r in verdict["rows"]
             if r["decision"] == "not-gated"}
    assert floor == {("msr/tsc/ @ 1000 Hz", "cpu_us_per_sample")} | {
        ("null: bare timerfd loop @ 1000 Hz", m) for m in ("rate_hz", "jitter_us",
                                                            "cpu_us_per_sample")}


def test_the_floor_moving_under_the_sampler_passes_while_its_cost_above_null_holds(
        tmp_path, capsys):
    """Issue 13, A/A runs here: the null timer's CPU per tick and the
    sampler's moved +80 % together between two runs of the same build (a
    slower host), while the sampler above the null timer moved by < 3 µs.
    That is not a regression; the same +80 % with the cost above null up by
    5 µs is."""
    c = common()
    base = sampler_and_overhead_rows(c, seed=1)

    def moved(above_by):
        out = []
        for r in sampler_and_overhead_rows(c, seed=2):
            if r["metric"] == "cpu_us_per_sample":
                above = r["role"] == rows.ABOVE_NULL
                samples = [x + above_by if above else x * 1.8 for x in r["samples"]]
                r = {**r, "samples": samples, **stats.summarize(samples)}
            out.append(r)
        return out
    a = write_run(tmp_path / "a", base)
    code, out, err = run_main(capsys, a, write_run(tmp_path / "b", moved(0.0)),
                              "--config", str(gate.DEFAULT_CONFIG))
    assert code == 0, err
    assert "4 not gated" in out and "compared, not gated (the machine's floor)" in out
    code, _, err = run_main(capsys, a, write_run(tmp_path / "c", moved(5.0)),
                            "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1
    assert [(r["role"], r["target"]) for r in verdict_of(tmp_path / "c")["rows"]
            if r["fails"]] == [(rows.ABOVE_NULL, "msr/tsc/ @ 1000 Hz")]


def test_one_latency_row_slowed_by_a_quarter_is_flagged_and_named(tmp_path, capsys):
    """Issue 13, item 4: a copy of a run with a single latency row 1.25x
    slower fails the gate on that row alone."""
    c = common()
    run_rows = multi_path_run(c) + sampler_and_overhead_rows(c)
    slowed = 3  # msr-dev pread cpuid:0x0, 0>0
    copy = [scaled(r, 1.25) if i == slowed else r for i, r in enumerate(run_rows)]
    code, _, err = run_main(capsys, write_run(tmp_path / "a", run_rows),
                            write_run(tmp_path / "b", copy), "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1
    verdict = verdict_of(tmp_path / "b")
    assert [r["id"] for r in verdict["rows"] if r["fails"]] == [gate_config.row_id(run_rows[slowed])]
    assert f"gate: regression: {gate_report.label(run_rows[slowed])}: +25.0%" in err

def test_a_whole_run_shift_is_named_in_the_summary_and_the_verdict(tmp_path, capsys):
    """Issue 13, A/A runs here: a host slower for the whole gbench step moved
    12 of 18 latency rows x1.29 together. The gate still fails those rows (a
    change that slows every path looks the same), but says so."""
    c = common()
    run_rows = multi_path_run(c)
    a = write_run(tmp_path / "a", run_rows)
    code, out, _ = run_main(capsys, a, write_run(tmp_path / "b", [scaled(r, 1.3) for r in run_rows]),
                            "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1
    assert "⚠️ **The whole gbench run moved**: its latency rows moved ×1.30" in out
    shift = verdict_of(tmp_path / "b")["run_shifts"]["gbench"]
    assert shift["whole_run"] and shift["factor"] == pytest.approx(1.3)
    # one row slowed alone is not a whole-run shift
    copy = [scaled(r, 1.25) if i == 3 else r for i, r in enumerate(run_rows)]
    code, out, _ = run_main(capsys, a, write_run(tmp_path / "c", copy),
                            "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1 and "The whole" not in out
    assert not verdict_of(tmp_path / "c")["run_shifts"]["gbench"]["whole_run"]

def victim_and_idle_rows(c, seed, stolen_add=0.0, local_add=0.0, wakeups_add=0.0,
                         deep_idle_add=0.0, p99_times=1.0):
    """A victim route (IPI: ~12 us stolen per read, 10 pairs), its gap p99
    per window, the same route read locally (~0 stolen, victim elsewhere)
    and an idle cell (wakeups, deep idle) with 10 pairs."""
    rng = np.random.default_rng(seed)
    target = "cpuid:0x0 @ flat out; victim CPU 0"
    stolen = list(12000 + stolen_add + rng.normal(0, 300, 10))
    local = list(local_add + rng.normal(0, 20, 10))
    p99 = list(22000 * p99_times + rng.normal(0, 800, 10))
    wake = list(1000 + wakeups_add + rng.normal(0, 25, 10))
    deep = list(-1.5 + deep_idle_add + rng.normal(0, 0.3, 10))
    return [
        latency(c, stolen, path="msr-dev", op="pread", target=target, cpu=1, target_cpu=0,
                metric="stolen_ns_per_read", harness="victim"),
        latency(c, p99, path="msr-dev", op="pread", target=target, cpu=1, target_cpu=0,
                metric="victim_gap_p99_ns", harness="victim"),
        latency(c, local, path="msr-dev", op="pread", target="cpuid:0x0 @ flat out; victim CPU 1",
                cpu=0, target_cpu=0, metric="stolen_ns_per_read", harness="victim"),
        latency(c, wake, path="sampler", op="msr", target="cpuid:0x0 @ 1000 Hz", cpu=0,
                target_cpu=None, metric="wakeups_per_s", harness="idle"),
        latency(c, deep, path="sampler", op="msr", target="cpuid:0x0 @ 1000 Hz", cpu=0,
                target_cpu=None, metric="deep_idle_pct", harness="idle"),
    ]


def test_the_victim_and_idle_metrics_are_gated_in_their_units(tmp_path, capsys):
    """Issue 16: a local read that now steals 3 us (a new IPI), an IPI read
    that steals twice as much, a sampler that wakes the machine 500 more
    times a second and keeps it 10 points further out of its deepest
    C-state (lower is worse there) are regressions; the same rows within
    their noise pass, and so does the IPI route stealing 50% more (the host
    moves it that much between runs). The victim's gap p99 tripling is
    compared, not gated (the host's preemptions)."""
    c = common()
    a = write_run(tmp_path / "a", victim_and_idle_rows(c, seed=1))
    moved = victim_and_idle_rows(c, seed=2, stolen_add=6000, p99_times=3.0)
    code, _, err = run_main(capsys, a, write_run(tmp_path / "b", moved),
                            "--config", str(gate.DEFAULT_CONFIG))
    assert code == 0, err
    p99 = row_of(verdict_of(tmp_path / "b"), metric="victim_gap_p99_ns")
    assert p99["decision"] == "not-gated" and "host" in p99["why"]
    worse = victim_and_idle_rows(c, seed=2, stolen_add=13000, local_add=3000, wakeups_add=500,
                                 deep_idle_add=-10)
    code, _, _ = run_main(capsys, a, write_run(tmp_path / "c", worse),
                          "--config", str(gate.DEFAULT_CONFIG))
    assert code == 1
    regressed = {(r["target"], r["metric"]) for r in verdict_of(tmp_path / "c")["rows"]
                 if r["decision"] == "regression"}
    assert regressed == {("cpuid:0x0 @ flat out; victim CPU 0", "stolen_ns_per_read"),
                         ("cpuid:0x0 @ flat out; victim CPU 1", "stolen_ns_per_read"),
                         ("cpuid:0x0 @ 1000 Hz", "wakeups_per_s"),
                         ("cpuid:0x0 @ 1000 Hz", "deep_idle_pct")}
