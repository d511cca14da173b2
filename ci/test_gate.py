"""Tests of the performance gate (ci/gate.py): whole gates through main()
as `ci/gate` runs them (exit status, Markdown, verdict file), on synthetic
runs (ci/conftest.py): the scenarios of the issue. Runs shaped like a
bench-all run are in test_gate_runs.py, the outputs and the command line in
test_gate_outputs.py, dead counters in test_gate_liveness.py, interleaved
rounds in test_gate_rounds.py. The decision functions are tested in
test_gate_stats.py, the configuration in test_gate_config.py.
"""

import json

import numpy as np
import pytest

from ci import gate, gate_config
from results import rows
from ci.conftest import (MACHINE, common, latency, lognormal, pair, reference, row_of, run_main,
                         unavailable, verdict_of, write_run)

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


def test_a_baseline_that_predates_target_states_says_so(tmp_path, capsys, builtin):
    """Issue 34: the current run times a cross-CPU read in target states;
    the baseline's row of it has none, and is missing with the reason."""
    c = common()
    old = latency(c, lognormal(1, 15000, 0.05), cpu=1)
    idle, busy = ({**latency(c, lognormal(2, 15000, 0.05), cpu=1), "target_state": s}
                  for s in ("idle", "busy"))
    b, cur = pair(tmp_path, [old], [idle, busy])
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 1
    assert row_of(verdict_of(cur), path="perf", target_state=None)["why"] == (
        "the current run times this cross-CPU read with its target CPU idle, busy; the "
        "baseline predates target states: make a new baseline (make baseline)")
    # states pair with their own: the same states on both sides pass
    b, cur = pair(tmp_path / "again", [idle, busy], [idle, busy])
    assert run_main(capsys, b, cur, "--config", str(builtin))[0] == 0
    # a read the current run cannot time is one row without a state: each
    # state of the baseline is missing with its reason
    gone = {**unavailable(c, path="perf", op="read", target="msr/tsc/", cpu=1, target_cpu=0),
            "reason": "no msr PMU"}
    b, cur = pair(tmp_path / "gone", [idle, busy], [gone])
    assert run_main(capsys, b, cur, "--config", str(builtin))[0] == 1
    whys = {r["why"] for r in verdict_of(cur)["rows"] if r["path"] == "perf"}
    assert whys == {"unavailable in the current run: no msr PMU"}, whys


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


# ---- runs of different modes or steps (issue 33) -------------------------------------

def mode_run(quick, steps, run_id="20261122T000000Z-000001", seed=1):
    """A bench-all run's rows that record their mode and steps: a latency row
    (gbench step) and, when the overhead step ran, an overhead row."""
    c = rows.common(run_id, "2026-11-22T00:00:00Z", MACHINE, quick=quick, steps=steps)
    out = [latency(c, lognormal(seed, 500, 0.05))]
    if "overhead" in steps:
        out.append(latency(c, lognormal(seed + 1, 3.0, 0.2, n=12), harness="hyperfine",
                           path="sampler", op="perf", target="stress-ng: wall time", cpu=1,
                           target_cpu=None, metric="overhead_pct"))
    return out


def test_a_quick_run_against_a_full_one_is_refused_unless_allowed(tmp_path, capsys, builtin):
    steps = ["gbench", "overhead"]
    b, cur = pair(tmp_path, mode_run(False, steps), mode_run(True, steps, seed=3))
    code, out, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and out == ""
    assert "are runs of different modes or steps" in err
    assert "baseline: a full run of gbench, overhead" in err
    assert "current: a QUICK run of gbench, overhead" in err
    assert "--allow-mode-mismatch" in err and "not run (usage or input error" in err
    assert not (cur / gate.VERDICT_NAME).exists()
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin), "--allow-mode-mismatch")
    assert code == 0
    assert "Runs of different modes or steps**, compared anyway" in out
    verdict = verdict_of(cur)
    assert verdict["baseline"]["run"] == {"mode": "full", "steps": steps}
    assert verdict["current"]["run"] == {"mode": "quick", "steps": steps}


def test_rows_of_a_step_only_one_run_ran_are_named_not_missing(tmp_path, capsys, builtin):
    b, cur = pair(tmp_path, mode_run(False, ["gbench", "overhead"]), mode_run(False, ["gbench"]))
    code, _, err = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 2 and "1 rows of steps only one of them ran cannot be compared" in err
    assert "A QUICK run's rows" not in err  # one mode: only the steps differ
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin), "--allow-mode-mismatch")
    assert code == 0, out  # not missing: its step did not run
    assert "Not compared (1)" in out and "the current run did not run its step, overhead" in out
    assert row_of(verdict_of(cur), path="sampler")["decision"] == "step-not-run"
    # the other way round: a step only the current run ran gives new rows that say why
    b2, cur2 = pair(tmp_path / "2", mode_run(False, ["gbench"]), mode_run(False, ["gbench", "overhead"]))
    code, out, _ = run_main(capsys, b2, cur2, "--config", str(builtin), "--allow-mode-mismatch")
    assert code == 0
    row = row_of(verdict_of(cur2), path="sampler")
    assert row["decision"] == "new" and row["why"] == ("not in the baseline, which did not run "
                                                        "its step, overhead")


def test_runs_alike_pass_quietly_and_a_baseline_that_says_nothing_is_noted(
        tmp_path, capsys, builtin):
    steps = ["gbench"]
    b, cur = pair(tmp_path, mode_run(True, steps), mode_run(True, steps, seed=3))
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin))
    assert code == 0 and "mode" not in out
    old = [latency(common(), lognormal(1, 500, 0.05))]  # written before rows said their mode
    b2, cur2 = pair(tmp_path / "2", old, mode_run(True, steps, seed=3))
    code, out, _ = run_main(capsys, b2, cur2, "--config", str(builtin))
    assert code == 0
    assert ("The baseline records no mode or steps" in out
            and "the other is a QUICK run of gbench" in out)


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
