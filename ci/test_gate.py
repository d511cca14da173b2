"""Tests of the performance gate (ci/gate.py): whole gates through main()
as `ci/gate` runs them (exit status, Markdown, verdict file), on synthetic
runs (ci/conftest.py). The decision functions are tested in
test_gate_stats.py, the configuration in test_gate_config.py.
"""

import errno
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ci import gate, gate_config, gate_report
from results import rows, stats
from ci.conftest import (MACHINE, common, latency, lognormal, reference, scaled, unavailable,
                         write_run)
from results.test_runfile import interrupted_run, killed_run


def run_main(capsys, baseline, current, *extra):
    code = gate.main(["--baseline", str(baseline), "--current", str(current), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def verdict_of(run_dir: Path) -> dict:
    return json.loads((run_dir / gate.VERDICT_NAME).read_text())


def row_of(verdict: dict, **key) -> dict:
    (found,) = [r for r in verdict["rows"] if all(r[k] == v for k, v in key.items())]
    return found


def test_environment_changes_name_what_moved():
    b = dict(MACHINE)
    c = {**MACHINE, "kernel": "6.19.1", "tsc_khz": 2599990,
         "mitigations": {"spectre_v2": "Vulnerable"}}
    identity = gate_config.load_config().identity
    fields = [f for f in gate_config.MACHINE_FIELDS if f not in identity]
    assert gate.environment_changes(b, c, fields) == [
        {"field": "kernel", "baseline": "6.18.44", "current": "6.19.1"},
        {"field": "mitigations.spectre_v2", "baseline": "Mitigation: Retpolines",
         "current": "Vulnerable"},
    ]  # tsc_khz moved by 3 ppm: recalibration, not news


# ---- the scenarios of the issue, through main() ----------------------------------

def pair(tmp_path, baseline_rows, current_rows):
    return (write_run(tmp_path / "baseline", baseline_rows),
            write_run(tmp_path / "current", current_rows))


def test_identical_runs_pass(tmp_path, capsys, builtin):
    c = common()
    base = [latency(c, lognormal(1, 500, 0.05)), latency(c, lognormal(2, 6000, 0.05), cpu=1)]
    b, cur = pair(tmp_path, base, base)
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert out.startswith(
        "## raplbench gate: ✅ pass — 0 regressions, 0 improvements, 2 unchanged")
    verdict = verdict_of(cur)
    assert verdict["verdict"] == "pass" and verdict["exit_code"] == 0
    assert {r["p_value"] for r in verdict["rows"]} == {1.0}


def test_a_run_measured_on_a_busy_machine_is_named_with_its_reason(tmp_path, capsys, builtin):
    """Issue 30: a run beside other work moves its rows with that work."""
    step = {"wall_s": 10.0, "others_cpu_s": 9.0, "others_cpus": 0.9, "steal_pct": 0.0,
            "load1": 2.0, "top": [{"command": "cc1", "cpu_s": 9.0}]}
    reason = "busy machine during sampler: other processes used up to 0.90 CPUs (cc1)"
    busy = {"busy": True, "reason": reason, "steps": {"sampler": step},
            "thresholds": {"others_cpus": 0.1, "steal_pct": 5.0}}
    samples = lognormal(1, 500, 0.05)
    b, cur = pair(tmp_path, [latency(common(), samples)],
                  [latency(common("20261122T000000Z-000002", contention=busy), samples)])
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert (f"> ⚠️ **The current run `20261122T000000Z-000002` was measured on a busy "
            f"machine**: {reason}.") in out
    assert "The baseline" not in out


def test_a_30_percent_shift_with_20_samples_fails_naming_the_row(tmp_path, capsys, builtin):
    c = common()
    steady = latency(c, lognormal(1, 6000, 0.05), path="uinsn", op="cpuid:0x1", target=None)
    b, cur = pair(tmp_path,
                  [steady, latency(c, lognormal(2, 500, 0.05, n=20))],
                  [steady, latency(c, lognormal(3, 650, 0.05, n=20))])
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    assert "❌ fail — 1 regression" in out
    assert "### ❌ Regressions (1)" in out
    assert "| perf read msr/tsc/ 0→0 latency (gbench) |" in out
    assert "gate: regression: perf read msr/tsc/ 0→0 latency (gbench): +29.6% " \
           "(median 495 ns → 642 ns, p < 0.0001)" in err
    row = row_of(verdict_of(cur), path="perf")
    assert row["decision"] == "regression" and row["fails"]
    assert row["p_value"] < 1e-4 and row["change_pct"] == pytest.approx(29.6, abs=0.1)
    assert row["cliffs_delta"] > 0.9 and row["cliffs_magnitude"] == "large"
    assert row["n_baseline"] == row["n_current"] == 20


def test_a_3_percent_shift_passes(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, [latency(c, lognormal(1, 500, 0.01))],
                  [latency(c, lognormal(2, 515, 0.01))])
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    row = row_of(verdict_of(cur), path="perf")
    # significant (tight samples) but within the 10% threshold: not a regression
    assert row["decision"] == "unchanged" and row["p_value"] < 0.01
    assert row["why"] == "significant but within ±10%"


def test_a_15_percent_shift_buried_in_large_variance_passes(tmp_path, capsys, builtin):
    c = common()
    base = lognormal(1, 500, 0.6)  # a noisy runner: half the samples off by > 1.5x
    other = np.array(lognormal(2, 500, 0.6))
    slower = other * (1.15 * np.median(base) / np.median(other))  # median exactly +15%
    b, cur = pair(tmp_path, [latency(c, base)], [latency(c, slower)])
    code, _, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    row = row_of(verdict_of(cur), path="perf")
    # the median moved beyond the threshold, but the U test sees no evidence
    assert row["decision"] == "unchanged" and row["change_pct"] == pytest.approx(15.0)
    assert row["p_value"] >= 0.01
    assert row["why"] == "beyond ±10% but not significant (p ≥ 0.01)"


def test_a_missing_row_fails_unless_allowed(tmp_path, capsys, builtin):
    c = common()
    kept = latency(c, lognormal(1, 500, 0.05))
    gone = latency(c, lognormal(2, 6000, 0.05), path="msr-dev", op="pread", target="0x611")
    b, cur = pair(tmp_path, [kept, gone], [kept])
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    assert "❌ fail — 0 regressions, 1 missing" in out
    assert "`msr-dev/pread/0x611/0>0/latency/gbench`" in out
    assert "gate: missing: msr-dev pread 0x611 0→0 latency (gbench)" in err
    assert row_of(verdict_of(cur), path="msr-dev")["why"] == "absent from the current run"

    allow = tmp_path / "allow.toml"
    allow.write_text('[allow]\nmissing = ["kinsn/*", "msr-dev/*"]\n')
    code, out, _ = run_main(capsys, b, cur, "--config", str(allow))
    assert code == 0 and "Missing, allowed by `[allow] missing` (1)" in out


def test_a_row_no_longer_ok_or_switched_to_a_stand_in_is_missing(tmp_path, capsys, builtin):
    c = common()
    real = latency(c, lognormal(1, 600, 0.05), path="msr-dev", op="pread", target="0x611")
    perf = latency(c, lognormal(2, 500, 0.05))
    perf_stand_in = {**perf, "stand_in": "msr/tsc/ stands in for power/energy-pkg/"}
    b, cur = pair(tmp_path, [real, perf], [unavailable(c), perf_stand_in])
    code, _, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    verdict = verdict_of(cur)
    assert row_of(verdict, path="msr-dev")["why"] == \
        "unavailable in the current run: /dev/cpu/0/msr missing: load the msr module"
    assert row_of(verdict, path="perf")["why"].startswith("the current run measures a stand-in")


def test_a_malformed_baseline_is_an_input_error_naming_file_and_line(tmp_path, capsys, builtin):
    c = common()
    good = latency(c, lognormal(1, 500, 0.05))
    b, cur = pair(tmp_path, [good], [good])
    lines = (b / "results.jsonl").read_text().splitlines()
    bad = json.loads(lines[0])
    bad["samples"] = "many"
    (b / "results.jsonl").write_text(lines[0] + "\n" + json.dumps(bad) + "\n" + lines[0][:100])
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and out == ""
    assert f"{b / 'results.jsonl'}:2: samples: 'many' is not of type 'array'" in err
    assert f"{b / 'results.jsonl'}:3: " in err and "not valid JSON" in err
    assert not (cur / gate.VERDICT_NAME).exists()


@pytest.mark.parametrize("make_args, message", [
    (lambda t: ["--baseline", str(t / "nowhere")],
     "nowhere: no such file or directory (the baseline)"),
    (lambda t: ["--baseline", str(t)], "no results.jsonl in this directory"),
    (lambda t: ["--config", str(t / "none.toml")], "none.toml: cannot read"),
    (lambda t: ["--alpha", "3"], "--alpha: must be a number between 0 and 1"),
])
def test_usage_errors_exit_2(tmp_path, capsys, builtin, make_args, message):
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])
    args = ["--baseline", str(run), "--current", str(run), "--config", str(builtin)]
    code = gate.main(args + make_args(tmp_path))
    assert code == 2 and message in capsys.readouterr().err


def test_unknown_config_key_exits_2_naming_file_and_key(tmp_path, capsys):
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])
    config = tmp_path / "gate.toml"
    config.write_text("[paths.perf]\nthreshold = 20\n")
    code, _, err = run_main(capsys, run, run, "--config", str(config))
    assert code == 2
    assert f"{config}: paths.perf.threshold: unknown key" in err


def test_another_machine_is_an_input_error_unless_cross_machine(tmp_path, capsys, builtin):
    b_rows = [latency(common(), lognormal(1, 500, 0.05))]
    c_rows = [latency(common(hostname="runner-2", kernel="6.19"), lognormal(2, 500, 0.05))]
    b, cur = pair(tmp_path, b_rows, c_rows)
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2
    assert "the baseline was measured on another machine" in err
    assert "hostname: 'runner-1' (baseline) vs 'runner-2' (current)" in err
    assert "--cross-machine" in err
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin), "--cross-machine")
    assert code == 0 and "Cross-machine comparison" in out
    assert "hostname `runner-1` → `runner-2`" in out and "kernel `6.18.44` → `6.19`" in out


def test_only_same_machine_rows_pair_and_the_others_are_reported(tmp_path, capsys, builtin):
    here, there = common(), common(hostname="runner-2")
    b_rows = [latency(here, lognormal(1, 500, 0.05)), latency(there, lognormal(2, 900, 0.05))]
    c_rows = [latency(here, lognormal(3, 500, 0.05))]
    b, cur = pair(tmp_path, b_rows, c_rows)
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert "⚠️ Not compared (1)" in out and "hostname='runner-2'" in out
    assert verdict_of(cur)["counts"]["other-machine"] == 1


def test_duplicate_keys_are_an_input_error(tmp_path, capsys, builtin):
    c = common()
    row = latency(c, lognormal(1, 500, 0.05))
    b, cur = pair(tmp_path, [row, row], [row])
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and "results.jsonl:2: (row): same machine and key as line 1" in err


def test_huge_values_of_valid_rows_are_quoted_in_part(tmp_path, capsys, builtin):
    """Issue 30: a valid row may hold a reason, a target or a hostname of
    megabytes; the gate's messages quote about 200 characters of each."""
    c = common()
    long_target = "t" * 2**20
    gone = latency(c, lognormal(1, 500, 0.05), target=long_target)
    broken = unavailable(c, path="perf", op="read", target=long_target,
                         reason="r" * 2**20)
    b, cur = pair(tmp_path, [gone], [broken])
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1 and len(err) < 2000, err[:3000]
    assert "gate: missing: perf read …ttt" in err and "rrrr…" in err
    b, cur = pair(tmp_path / "dup", [gone, gone], [gone])
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and len(err) < 2000, err[:3000]
    assert "results.jsonl:2: (row): same machine and key as line 1 (perf/read/ttt" in err
    other = latency(common(hostname="h" * 2**20), lognormal(1, 500, 0.05))
    b, cur = pair(tmp_path / "other", [latency(c, lognormal(1, 500, 0.05))], [other])
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and len(err) < 2000, err[:3000]
    assert "hostname: 'runner-1' (baseline) vs 'hhhh" in err


def test_skipped_rows_are_counted_and_new_rows_listed(tmp_path, capsys, builtin):
    c = common()
    perf = latency(c, lognormal(1, 500, 0.05))
    new = latency(c, lognormal(2, 40, 0.05), path="ebpf-mmap", op="load")
    b, cur = pair(tmp_path, [reference(c), unavailable(c), perf], [perf, unavailable(c), new])
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert "Skipped: 1 row not ok in the baseline, 1 reference row." in out
    assert "1 new row (not in the baseline)" in out and "- ebpf-mmap load msr/tsc/ 0→0" in out
    counts = verdict_of(cur)["counts"]
    assert counts["skipped-not-ok"] == 1 and counts["skipped-reference"] == 1 and counts["new"] == 1


def test_too_few_samples_are_reported_not_compared(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, [latency(c, lognormal(1, 500, 0.05, n=5))],
                  [latency(c, lognormal(2, 900, 0.05, n=5))])
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0 and "5 vs 5 samples, fewer than min_samples = 10" in out
    code, _, _ = run_main(capsys, b, cur, "--config", str(builtin), "--min-samples", "5")
    assert code == 1


# ---- done-when: a multi-path run against itself and against itself x 1.5 ------------

def multi_path_run(c):
    """A run shaped like a QUICK bench-all: 10 samples a row, latency, cycles
    and rate rows, same-CPU and cross-CPU reads, rows that are unavailable."""
    def s(seed, median, sigma=0.05):
        return lognormal(seed, median, sigma, n=10)
    return [
        latency(c, s(1, 0.04), path="uinsn", op="nop", target=None, cpu=0, target_cpu=None),
        latency(c, s(2, 5800), path="uinsn", op="cpuid:0x1", target=None, cpu=0, target_cpu=None),
        latency(c, s(3, 340), path="powercap", op="pread",
                target="/sys/class/net/lo/statistics/rx_bytes", target_cpu=None,
                stand_in="no powercap zone: a live sysfs counter stands in"),
        latency(c, s(4, 6100), path="msr-dev", op="pread", target="cpuid:0x0"),
        latency(c, s(5, 55000, 0.15), path="msr-dev", op="pread", target="cpuid:0x0", cpu=1),
        latency(c, s(6, 218)),
        latency(c, s(7, 17000, 0.08), cpu=1),
        latency(c, s(8, 270), path="ebpf-lookup", op="lookup"),
        latency(c, s(9, 120), path="kinsn", op="rdmsr:0x611", target="0x611",
                metric="cycles", harness="kbench"),
        latency(c, s(10, 999, 0.001), path="ebpf-mmap", op="tick", target="bpf_timer",
                cpu=None, target_cpu=0, metric="rate_hz"),
        unavailable(c),
        reference(c),
    ]


def sampler_and_overhead_rows(c, seed=20, drift=1.0, jitter_drift=1.0):
    """What the sampler's self-report and the overhead experiment add to a
    QUICK run: 10 windows per sampler row, 12 pairs per overhead row. `drift`
    moves the whole run as a VM does between two runs (every window of the
    run at once, which the windows' own spread cannot show)."""
    rng = np.random.default_rng(seed)

    def windows(median, sigma, k=10):
        return (median * drift * rng.lognormal(0, sigma, k)).tolist()
    target = "msr/tsc/ @ 1000 Hz"
    null = "bare timerfd loop @ 1000 Hz"
    out = []
    for t, cpu_us in ((target, 20.0), (null, 15.0)):
        out += [
            latency(c, windows(1000, 0.001), path="sampler", op="perf", target=t, cpu=None,
                    target_cpu=None, metric="rate_hz", harness="sampler"),
            latency(c, (np.array(windows(3.5, 0.15)) * jitter_drift).tolist(), path="sampler",
                    op="perf", target=t, cpu=None, target_cpu=None, metric="jitter_us",
                    harness="sampler"),
            latency(c, windows(15.0, 0.2), path="sampler", op="perf", target=t, cpu=None,
                    target_cpu=None, metric="cpu_us_per_sample", harness="sampler")]
    out = [{**r, "role": rows.NULL} if r["target"] == null else r for r in out]
    out.append({**latency(c, (rng.normal(5.0, 0.8, 10)).tolist(), path="sampler", op="perf",
                          target=target, cpu=None, target_cpu=None,
                          metric="cpu_us_per_sample", harness="sampler"),
                "role": rows.ABOVE_NULL})
    out.append(latency(c, rng.normal(2.0, 6.0, 12).tolist(), path="sampler", op="perf",
                       target="stress-ng ..., fixed work pinned to CPU 1: wall time", cpu=1,
                       target_cpu=None, metric="overhead_pct", harness="hyperfine"))
    return out


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


# ---- outputs, baseline storage, the wrapper -------------------------------------------

def test_summary_file_step_summary_and_verdict_path(tmp_path, capsys, builtin, monkeypatch):
    c = common()
    b, cur = pair(tmp_path, [latency(c, lognormal(1, 500, 0.05))],
                  [latency(c, lognormal(2, 700, 0.05))])
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    summary, verdict = tmp_path / "summary.md", tmp_path / "out" / "v.json"
    verdict.parent.mkdir()
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin),
                            "--summary", str(summary), "--verdict", str(verdict))
    assert code == 1
    assert summary.read_text() == out
    assert step.read_text() == "earlier step\n" + out + "\n"
    doc = json.loads(verdict.read_text())
    assert doc["verdict"] == "fail" and doc["exit_code"] == 1
    assert doc["settings"]["defaults"] == {"alpha": 0.01, "threshold_pct": 10.0, "min_samples": 10,
                                           "threshold_abs": 0.0, "min_effect": 0.0}
    assert doc["baseline"]["file"].endswith("baseline/results.jsonl")
    assert not (cur / gate.VERDICT_NAME).exists()
    # --summary naming the step summary itself appends once, never overwrites
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin), "--summary", str(step))
    assert step.read_text().count("## raplbench gate") == 2


def test_store_baseline_validates_then_copies(tmp_path, capsys):
    c = common()
    run = write_run(tmp_path / "runs" / "r1", [latency(c, lognormal(1, 500, 0.05))])
    target = tmp_path / "baseline"
    assert gate.main(["--store-baseline", "--current", str(run), "--baseline", str(target)]) == 0
    stored = target / "results.jsonl"
    assert stored.read_bytes() == (run / "results.jsonl").read_bytes()
    assert "baseline: " in capsys.readouterr().out
    (run / "results.jsonl").write_text("{\n")
    assert gate.main(["--store-baseline", "--current", str(run), "--baseline", str(target)]) == 2
    assert "results.jsonl:1: (row): not valid JSON" in capsys.readouterr().err
    assert stored.read_bytes() != b"{\n"  # the old baseline is kept


def test_the_wrapper_runs_from_any_directory(tmp_path):
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])
    (tmp_path / "ci").mkdir()  # a `ci` package of the caller's must not shadow ours
    (tmp_path / "ci" / "__init__.py").write_text("raise ImportError('wrong ci')\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([str(gate.REPO / "ci" / "gate"), "--baseline", "run/results.jsonl",
                           "--current", "run"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "✅ pass" in done.stdout and (run / gate.VERDICT_NAME).exists()


def test_a_bug_of_the_gate_exits_2_never_1(tmp_path, capsys, monkeypatch, builtin):
    """1 means a verdict that fails; a crash of the gate is not one."""
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])

    def broken(*_):
        raise ValueError("Out of range float values are not JSON compliant")
    monkeypatch.setattr(gate, "run_gate", broken)
    code, _, err = run_main(capsys, run, run, "--config", str(builtin))
    assert code == 2
    assert "gate: internal error: ValueError: Out of range float" in err


def test_make_gate_exits_with_the_gates_own_status(tmp_path, builtin):
    """Issue 13, item 5: make turns a failed recipe's 1 into 2, so a CI step
    using `make gate` could not tell a regression from a usage error. The
    Makefile runs the gate as it reads itself: 0 pass, 1 regression, 2 bad
    input, with the gate's Markdown still on stdout."""
    c = common()
    base = write_run(tmp_path / "base", [latency(c, lognormal(1, 500, 0.05))])
    slower = write_run(tmp_path / "slower", [latency(c, lognormal(2, 700, 0.05))])
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_STEP_SUMMARY", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def make_gate(current, *extra):
        return subprocess.run(["make", "-s", "-C", str(gate.REPO), "gate", f"BASELINE={base}",
                               f"CURRENT={current}", f"GATE_FLAGS=--config {builtin}", *extra],
                              env=env, capture_output=True, text=True, timeout=120)
    passed = make_gate(base)
    assert passed.returncode == 0, passed.stderr
    assert "✅ pass" in passed.stdout
    failed = make_gate(slower)
    assert failed.returncode == 1, failed.stderr
    assert "❌" in failed.stdout and "gate: FAIL" in failed.stderr
    bad = make_gate(tmp_path / "nowhere")
    assert bad.returncode == 2 and "gate: not run" in bad.stderr


def test_make_gate_and_baseline_take_paths_with_spaces_and_quotes(tmp_path, builtin):
    """Issue 30, item 4: `make gate BASELINE="dir with space/x"` said "2
    --baseline runs": GATE_ARGS split the path into words."""
    c = common()
    spaced = tmp_path / "dir with space" / "it's"
    base = write_run(spaced / "x", [latency(c, lognormal(1, 500, 0.05))])
    current = write_run(spaced / "current run", [latency(c, lognormal(1, 500, 0.05))])
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_STEP_SUMMARY", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def make(*args):
        return subprocess.run(["make", "-s", "-C", str(gate.REPO), *args], env=env,
                              capture_output=True, text=True, timeout=120)
    flags = f"GATE_FLAGS=--config {builtin}"
    passed = make("gate", f"BASELINE={base}", f"CURRENT={current}", flags)
    assert passed.returncode == 0, passed.stderr
    assert "✅ pass" in passed.stdout and (current / gate.VERDICT_NAME).exists()
    missing = spaced / "nowhere"
    bad = make("gate", f"BASELINE={missing}", f"CURRENT={current}", flags)
    assert bad.returncode == 2
    assert f"{missing}: no such file or directory (the baseline)" in bad.stderr, bad.stderr
    assert "--baseline runs" not in bad.stderr
    stored = spaced / "stored baseline"
    done = make("baseline", f"CURRENT={current}", f"BASELINE={stored}")
    assert done.returncode == 0, done.stderr
    assert (stored / "results.jsonl").read_bytes() == (current / "results.jsonl").read_bytes()


# ---- liveness: a counter that died, a schema 1 baseline --------------------------

PSYS = "power/energy-psys/"
FROZEN_NOTE = f"{PSYS} on CPU 0: did not change in 100 ms (97 reads): a dead counter"


def with_verdict(row, liveness, note=None):
    return {**row, "liveness": liveness, "liveness_note": note}


def as_schema_1(row):
    return {**{k: v for k, v in row.items() if not k.startswith("liveness")},
            "schema_version": "1"}


def psys_rows(c, verdict, note=None):
    return [with_verdict(latency(c, lognormal(3, 8000, 0.03), target=PSYS), verdict, note),
            with_verdict(latency(c, lognormal(4, 8100, 0.03), target=PSYS, cpu=1), verdict, note),
            latency(c, lognormal(5, 0.3, 0.03), path="uinsn", op="nop", target=None)]


def test_a_counter_that_died_fails_the_gate_and_is_named(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "live"), psys_rows(c, "frozen", FROZEN_NOTE))
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    assert "❌ fail — 0 regressions, 2 rows whose counter died" in out.splitlines()[0]
    assert "### ❌ Rows whose counter died (2)" in out
    assert f"| live | frozen | {FROZEN_NOTE} |" in out
    assert f"gate: counter died: perf read {PSYS} 0→0 latency (gbench): live → frozen" in err
    verdict = verdict_of(cur)
    assert verdict["verdict"] == "fail" and verdict["settings"]["counter_died"] == "fail"
    assert [(e["change"], e["baseline"], e["current"], e["fails"])
            for e in verdict["liveness_changes"]] == [("died", "live", "frozen", True)] * 2
    assert {r["decision"] for r in verdict["rows"]} == {"unchanged"}  # the latency did not move


def test_a_counter_that_died_can_be_a_warning(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text('[liveness]\ncounter_died = "warn"\n')
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "live"), psys_rows(c, "no-unit", "unit 'Watts'"))
    code, out, _ = run_main(capsys, b, cur, "--config", str(config))
    assert code == 0
    assert "✅ pass — 0 regressions, 2 rows whose counter died" in out.splitlines()[0]
    assert "⚠️ **Rows whose counter died** (a warning" in out
    assert not any(e["fails"] for e in verdict_of(cur)["liveness_changes"])


def test_a_counter_that_came_alive_is_reported_not_failed(tmp_path, capsys, builtin):
    c = common()
    b, cur = pair(tmp_path, psys_rows(c, "frozen", FROZEN_NOTE), psys_rows(c, "live"))
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0
    assert "### Counter verdicts that changed (2)" in out and "| frozen | live |" in out
    assert "died" not in out.splitlines()[0]


def test_a_schema_1_baseline_pairs_with_a_schema_2_run(tmp_path, capsys, builtin):
    """Last year's run against this month's: liveness is not part of the key."""
    c = common()
    base = [as_schema_1(r) for r in psys_rows(c, "live")]
    slower = [scaled(r, 1.3) for r in psys_rows(c, "frozen", FROZEN_NOTE)]
    b, cur = pair(tmp_path, base, slower)
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1, err  # the 30% regressions, not the verdict
    assert out.splitlines()[0].startswith("## raplbench gate: ❌ fail — 3 regressions, 0 improvements")
    assert "Liveness not compared for 3 row pairs: one side predates liveness probing" in out
    verdict = verdict_of(cur)
    assert verdict["liveness_changes"] == [] and verdict["liveness_not_compared"] == 3
    assert {r["decision"] for r in verdict["rows"]} == {"regression"}


def test_schema_1_runs_on_both_sides_gate_as_before(tmp_path, capsys, builtin):
    c = common()
    base = [as_schema_1(r) for r in psys_rows(c, "live")]
    b, cur = pair(tmp_path, base, base)
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0 and "3 unchanged" in out.splitlines()[0]


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


# ---- interleaved rounds (ci/ab) --------------------------------------------------------

# How much a drifting VM moves a whole run, round by round (the A/A runs here
# moved x0.74 to x1.29), and the common-mode factor of each side's run.
ROUND_DRIFT = [(1.00, 1.02), (1.25, 1.21), (0.80, 0.83), (1.05, 1.29), (0.95, 0.90),
               (1.10, 1.12)]


def rounds_of(tmp_path, slow_row=None, factor=1.25, drift=ROUND_DRIFT):
    """Six interleaved rounds of multi_path_run: both sides drift together
    within a round and apart between rounds; `slow_row` (an index of
    multi_path_run) is `factor` times slower in every current round."""
    baselines, currents = [], []
    for i, (drift_b, drift_c) in enumerate(drift):
        b_rows = multi_path_run(common(f"20261122T00000{i}Z-00000b"))
        c_rows = multi_path_run(common(f"20261122T00000{i}Z-00000c"))
        rng = np.random.default_rng(100 + i)
        c_rows = [scaled(r, drift_c * rng.lognormal(0, 0.02) *
                         (factor if k == slow_row else 1.0)) for k, r in enumerate(c_rows)]
        b_rows = [scaled(r, drift_b) for r in b_rows]
        baselines.append(write_run(tmp_path / f"b{i}", b_rows))
        currents.append(write_run(tmp_path / f"c{i}", c_rows))
    return baselines, currents


def gate_rounds(capsys, baselines, currents, *extra):
    code = gate.main(["--baseline", *map(str, baselines), "--current", *map(str, currents),
                      "--config", str(gate.DEFAULT_CONFIG), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_interleaved_rounds_that_drift_together_pass(tmp_path, capsys):
    """Round 4's runs differ by x1.23 as a whole: gated alone, that pair
    fails; over six interleaved rounds, the rows are unchanged."""
    baselines, currents = rounds_of(tmp_path)
    code, out, _ = run_main(capsys, baselines[3], currents[3], "--config",
                            str(gate.DEFAULT_CONFIG))
    assert code == 1
    code, out, err = gate_rounds(capsys, baselines, currents)
    assert code == 0, out + err
    assert "6 interleaved rounds: baseline `20261122T000000Z-00000b`" in out
    assert "paired t test over the rounds" in out
    verdict = verdict_of(currents[-1])
    assert verdict["rounds"] == 6 and len(verdict["rounds_runs"]) == 6
    row = row_of(verdict, path="perf", op="read", cpu=0, metric="latency")
    assert row["rounds"] == 6 and row["test"] == "paired t over rounds"
    assert row["ci_unit"] == "%" and row["ci"][0] < 0 < row["ci"][1]


def test_one_row_a_quarter_slower_in_every_round_is_flagged_alone(tmp_path, capsys):
    baselines, currents = rounds_of(tmp_path, slow_row=5)  # perf read 0→0
    code, out, err = gate_rounds(capsys, baselines, currents)
    assert code == 1
    verdict = verdict_of(currents[-1])
    assert [r["id"] for r in verdict["rows"] if r["fails"]] == \
        [gate_config.row_id(multi_path_run(common())[5])]
    # +25 % and the drift of the current runs against the baselines; its 99 % CI
    assert "gate: regression: perf read msr/tsc/ 0→0 latency (gbench): +29.9% (+14.1..+48.0%)" in err
    assert "| perf read msr/tsc/ 0→0 latency (gbench) |" in out


def test_uneven_rounds_are_a_usage_error(tmp_path, capsys):
    baselines, currents = rounds_of(tmp_path)
    code, _, err = gate_rounds(capsys, baselines, currents[:-1])
    assert code == 2
    assert "6 --baseline runs and 5 --current runs" in err


def test_store_baseline_takes_one_run(tmp_path, capsys):
    baselines, currents = rounds_of(tmp_path)
    code = gate.main(["--store-baseline", "--current", str(currents[0]), str(currents[1])])
    assert code == 2
    assert "--store-baseline stores one run" in capsys.readouterr().err


# ---- runs that did not complete (issue 30) ----------------------------------------------

def gate_command(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([str(gate.REPO / "ci" / "gate"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_incomplete_run_is_refused_by_the_gate_and_never_stored(tmp_path, capsys):
    """bench-all leaves incomplete.json in a run it did not complete: an
    interrupted run (no results.jsonl), a killed one (valid rows all the
    same). Neither is gated against, nor stored as the baseline."""
    good = write_run(tmp_path / "good", [latency(common(), lognormal(1, 500, 0.05))])
    stopped = interrupted_run(tmp_path / "stopped")
    killed = killed_run(tmp_path / "killed")
    stored = tmp_path / "stored" / "baseline.jsonl"
    for run, words in ((stopped, "was interrupted by SIGINT"), (killed, "did not finish"),
                       (killed / "results.jsonl", "did not finish")):
        for args in (["--baseline", good, "--current", run],
                     ["--baseline", run, "--current", good],
                     ["--store-baseline", "--current", run, "--baseline", stored]):
            code = gate.main([str(a) for a in args])
            err = capsys.readouterr().err
            assert code == 2, (args, err)
            assert f"{run}: the run started at 2026-11-26T17:02:09Z" in err
            assert words in err and "gate: not run" in err
            assert not stored.parent.exists()
    # the commands themselves (make gate, make baseline)
    for args in (["--baseline", good, "--current", killed],
                 ["--store-baseline", "--current", stopped, "--baseline", stored]):
        done = gate_command(*args)
        assert done.returncode == 2 and "gate: not run" in done.stderr, done.stderr
        assert "did not finish" in done.stderr or "interrupted" in done.stderr
    assert not stored.parent.exists()
    assert gate_command("--store-baseline", "--current", good, "--baseline", stored) \
        .returncode == 0
    assert stored.read_bytes() == (good / "results.jsonl").read_bytes()


# ---- the baseline written whole (issue 30) -------------------------------------------------

def test_the_baseline_is_written_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    """A baseline whose rename fails (a full or failing disk) leaves the old
    baseline as it was, no temporary file beside it, and one message naming
    the file; not an internal error."""
    old = write_run(tmp_path / "old", [latency(common(), lognormal(1, 500, 0.05))])
    new = write_run(tmp_path / "new", [latency(common(), lognormal(2, 600, 0.05))])
    target = tmp_path / "baseline"
    assert gate.main(["--store-baseline", "--current", str(old), "--baseline", str(target)]) == 0
    capsys.readouterr()

    def failing_replace(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, "replace", failing_replace)
    assert gate.main(["--store-baseline", "--current", str(new), "--baseline", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{target / 'results.jsonl'}: input/output error" in err and "internal" not in err
    assert sorted(p.name for p in target.iterdir()) == ["results.jsonl"]
    assert (target / "results.jsonl").read_bytes() == (old / "results.jsonl").read_bytes()


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


def test_the_default_current_run_names_a_newer_interrupted_run(tmp_path, capsys, monkeypatch):
    """Issue 30: after a Ctrl-C, `latest` still names the last complete
    run; the gate says that it judges that one, not the run just cut."""
    from results import run_state
    runs = tmp_path / "runs"
    done = write_run(runs / "20261126T171000Z-bbbbbb",
                     [latency(common(), lognormal(1, 500, 0.05))])
    cut = runs / "20261126T172000Z-cccccc"
    cut.mkdir()
    run_state.interrupted(cut, {"started": "t2", "pid": 1}, "SIGINT", "overhead")
    (runs / "latest").symlink_to(done.name)
    monkeypatch.setattr(gate, "DEFAULT_CURRENT", runs / "latest")
    code = gate.main(["--baseline", str(done)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "20261126T172000Z-cccccc, newer than latest, is not used: the run started at t2 was " \
           "interrupted by SIGINT during its overhead step" in err
