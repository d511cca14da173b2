"""ci/aa's checks on synthetic runs (the A/A runs themselves are real
QUICK runs: `.ci/run` makes them)."""

import pytest

from ci import aa, gate
from ci.conftest import common, latency, lognormal
from ci.test_gate import multi_path_run, sampler_and_overhead_rows
from results import rows


def run_of(tmp_path, run_rows, name="run.jsonl"):
    path = tmp_path / name
    rows.write_jsonl(run_rows, path)
    return gate.load_run(path)


def test_the_slowed_copy_check_flags_each_row_alone(tmp_path):
    c = common()
    run = run_of(tmp_path, multi_path_run(c) + sampler_and_overhead_rows(c))
    ok, lines = aa.slowed_copy_check(run, tmp_path)
    # same-CPU latency rows only: cross-CPU rows have a 25 % threshold (ci/gate.toml)
    same_cpu = [r for r in multi_path_run(c) if r["metric"] == "latency"
                and r["status"] == "ok" and r["harness"] != "reference"
                and not (r["cpu"] is not None and r["target_cpu"] is not None
                         and r["cpu"] != r["target_cpu"])]
    assert ok, lines
    assert lines[0] == (f"slowed copy: {len(same_cpu)} of {len(same_cpu)} latency rows "
                        "flagged alone when 1.25x slower")


def test_the_slowed_copy_check_names_a_row_too_noisy_to_flag(tmp_path):
    c = common()
    noisy = latency(c, lognormal(3, 500, 0.6, n=10), path="powercap", op="pread",
                    target="/sys/class/net/lo/statistics/rx_bytes", target_cpu=None)
    ok, lines = aa.slowed_copy_check(run_of(tmp_path, [noisy]), tmp_path)
    assert not ok
    assert lines[0] == "slowed copy: 0 of 1 latency rows flagged alone when 1.25x slower"
    assert "missed or mixed up: powercap pread" in lines[1] and "flagged: nothing" in lines[1]


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
