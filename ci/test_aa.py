"""ci/aa's checks on synthetic runs (the A/A runs themselves are real
QUICK runs: `.ci/run` makes them)."""

import pytest

from ci import aa, gate, gate_config
from ci.conftest import (ROUND_DRIFT, common, latency, lognormal, multi_path_run, rounds_of,
                         sampler_and_overhead_rows)
from results import rows
from results.stats import summarize as rows_summary


def run_of(tmp_path, run_rows, name="run.jsonl"):
    path = tmp_path / name
    rows.write_jsonl(run_rows, path)
    return gate.load_run(path)


def same_cpu_latency_rows():
    """multi_path_run's measured latency rows that read their own CPU's counter."""
    return [r for r in multi_path_run(common()) if r["metric"] == "latency"
            and r["status"] == "ok" and r["harness"] != "reference"
            and not (r["cpu"] is not None and r["target_cpu"] is not None
                     and r["cpu"] != r["target_cpu"])]


def test_the_slowed_copy_check_flags_each_row_alone(tmp_path):
    c = common()
    run = run_of(tmp_path, multi_path_run(c) + sampler_and_overhead_rows(c))
    ok, lines = aa.slowed_copy_check(run, tmp_path)
    # same-CPU latency rows only: cross-CPU rows have a 25 % threshold (ci/gate.toml)
    same_cpu = same_cpu_latency_rows()
    assert ok, lines
    assert lines[0].startswith(f"slowed copy: {len(same_cpu)} of {len(same_cpu)} latency rows "
                               "flagged alone when 1.25x slower")


def test_the_slowed_copy_check_names_a_row_too_noisy_to_flag(tmp_path):
    """A row whose repetitions spread wider than 1.25x cannot show a 25 %
    change at n = 10: listed, not a failure of the gate."""
    c = common()
    noisy = latency(c, lognormal(3, 500, 0.6, n=10), path="powercap", op="pread",
                    target="/sys/class/net/lo/statistics/rx_bytes", target_cpu=None)
    ok, lines = aa.slowed_copy_check(run_of(tmp_path, [noisy]), tmp_path)
    assert ok
    assert lines[0] == ("slowed copy: 0 of 1 latency rows flagged alone when 1.25x slower; "
                        "1 too noisy at this n")
    assert lines[1].startswith("    too noisy at n = 10: powercap pread")


def let_every_row_through(monkeypatch):
    """Replaces the gate with one that decides every row unchanged."""
    real = gate.run_gate

    def lenient(baseline, current, config):
        verdict = real(baseline, current, config)
        for r in verdict.results:
            r.decision = "unchanged"
        return verdict
    monkeypatch.setattr(aa.gate, "run_gate", lenient)


def test_a_separable_row_the_gate_misses_fails_the_check(tmp_path, monkeypatch):
    """Were the gate to let through a row whose slowed copy does not overlap
    it (here: a gate that decides nothing fails), the check fails naming it."""
    c = common()
    tight = latency(c, lognormal(3, 500, 0.02, n=10), path="powercap", op="pread",
                    target="/sys/class/net/lo/statistics/rx_bytes", target_cpu=None)
    let_every_row_through(monkeypatch)
    ok, lines = aa.slowed_copy_check(run_of(tmp_path, [tight]), tmp_path)
    assert not ok
    assert lines[1].startswith("    missed or mixed up: powercap pread")
    assert lines[1].endswith("flagged: nothing")


def test_an_a_a_pair_reports_its_largest_moves(tmp_path):
    c = common()
    a = run_of(tmp_path, multi_path_run(c), "a.jsonl")
    b = run_of(tmp_path, multi_path_run(c), "b.jsonl")
    report = aa.gate_pair("A/A pair 1 of 1", a, b)
    assert report.passed
    lines = aa.describe(report)
    assert lines[0].startswith("A/A pair 1 of 1: pass: 0 regressions, 0 missing")
    assert any(line.startswith("    largest move of latency: 0.0% (threshold 10%)")
               for line in lines)


@pytest.mark.parametrize("argv", [["--pairs", "-1"], ["--pairs", "0"]])
def test_usage_errors_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        aa.parse_args(argv)
    assert e.value.code == 2


def test_a_pair_reports_the_shift_of_each_harness_and_the_rows_that_followed_it(tmp_path):
    """A host slower for a whole step moves most rows together: the report
    gives that shift, so a reader can tell it from one row that regressed."""
    c = common()
    base = multi_path_run(c)
    slower = []
    for i, row in enumerate(base):
        factor = 1.3 if row["metric"] == "latency" and i % 4 else 1.0  # 3 in 4 rows move 1.3x
        samples = [x * factor for x in row["samples"]]
        slower.append({**row, "samples": samples, **(rows_summary(samples) if samples else {})})
    report = aa.gate_pair("A/A pair 1 of 1", run_of(tmp_path, base, "a.jsonl"),
                          run_of(tmp_path, slower, "b.jsonl"))
    shifts = report.verdict.shifts
    assert shifts, "no latency rows compared"
    for shift in shifts.values():
        assert shift.factor == pytest.approx(1.3)
        assert shift.rows / 2 <= shift.following < shift.rows
    assert any(line.startswith("    whole-run shift of ") and "x1.30" in line
               for line in aa.describe(report))


def test_a_pair_names_its_improvements_too(tmp_path):
    """In an A/A pair an improvement is a false alarm the other way: the
    report names the row, as it names a regression."""
    c = common()
    base = multi_path_run(c)
    index = next(i for i, row in enumerate(base) if row["metric"] == "latency")
    faster = [x * 0.5 for x in base[index]["samples"]]
    current = [*base[:index], {**base[index], "samples": faster, **rows_summary(faster)},
               *base[index + 1:]]
    report = aa.gate_pair("A/A pair 1 of 1", run_of(tmp_path, base, "a.jsonl"),
                          run_of(tmp_path, current, "b.jsonl"))
    lines = aa.describe(report)
    assert lines[0].startswith("A/A pair 1 of 1: pass: 0 regressions, 0 missing, 1 improvements")
    assert any(line.startswith(f"    improvement: {aa.label(base[index])}: -50.0%") for line in lines), lines


# ---- --rounds: the checks on interleaved rounds -----------------------------------------

def loaded_rounds(tmp_path, **kwargs):
    baselines, currents = rounds_of(tmp_path, **kwargs)
    return aa.load(baselines), aa.load(currents)


def test_the_slowed_rounds_check_flags_each_row_alone(tmp_path):
    baselines, currents = loaded_rounds(tmp_path)
    ok, lines = aa.slowed_rounds_check(baselines, currents, tmp_path)
    same_cpu = same_cpu_latency_rows()
    assert ok, lines
    assert lines == [f"slowed copy: {len(same_cpu)} of {len(same_cpu)} latency rows flagged "
                     "alone when 1.25x slower in every current round"]


def test_a_row_whose_rounds_scatter_is_too_noisy_and_a_resolvable_miss_fails(tmp_path,
                                                                              monkeypatch):
    baselines, currents = loaded_rounds(tmp_path)
    # the perf read 0→0 row: one current round 3x slower, the others as they were
    noisy_id = aa.row_id(multi_path_run(common())[5])
    currents[2] = aa._slowed(currents[2], noisy_id, tmp_path / "x.jsonl")
    for _ in range(4):
        currents[2] = aa._slowed(currents[2], noisy_id, tmp_path / "x.jsonl")
    ok, lines = aa.slowed_rounds_check(baselines, currents, tmp_path)
    assert ok, lines
    assert "; 1 too noisy at 6 rounds" in lines[0]
    assert any(line.startswith("    too noisy at 6 rounds: perf read msr/tsc/ 0→0 latency")
               for line in lines)

    # a gate that lets every row through misses rows the rounds do resolve
    let_every_row_through(monkeypatch)
    steady = [(d, d) for d, _ in ROUND_DRIFT]  # the two sides of a round alike: resolvable
    ok, lines = aa.slowed_rounds_check(*loaded_rounds(tmp_path / "again", drift=steady),
                                       tmp_path)
    assert not ok
    assert any(line.startswith("    missed or mixed up: ") for line in lines)


def test_rounds_below_3_are_a_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        aa.parse_args(["--rounds", "2"])
    assert e.value.code == 2
    assert "--rounds must be at least 3" in capsys.readouterr().err


def test_a_kind_pattern_matches_its_rows_and_keeps_target_states_apart():
    """The [rows] pattern ci/aa suggests for a row matches the row's own id,
    and a cross-CPU read in one target state (issue 34) is a kind of its own."""
    c = common()
    same = latency(c, [1.0], cpu=0, target_cpu=0)
    busy = {**latency(c, [1.0], cpu=1, target_cpu=0), "target_state": "busy"}
    idle = {**busy, "target_state": "idle"}
    for row in (same, busy, idle):
        assert gate_config.is_allowed(gate_config.row_id(row), [aa.category(row)]), row
    assert aa.category(busy) == "perf/*/*/?>?:busy/latency/*" != aa.category(idle)
    assert not gate_config.is_allowed(gate_config.row_id(idle), [aa.category(busy)])
