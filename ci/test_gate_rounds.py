"""The gate on interleaved rounds (several runs a side, ci/ab)."""

from ci import gate, gate_config
from ci.conftest import common, multi_path_run, row_of, rounds_of, run_main, verdict_of

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
